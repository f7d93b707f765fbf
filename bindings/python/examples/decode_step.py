#!/usr/bin/python3
"""Loads the manifest of a decode step, writes the decode metadata (block table, sequence lengths) into the
pinned-host arena, uploads every argument to the memory kind the manifest asks for (pinned_host arguments
zero-copy), and reads each buffer back.

    /usr/bin/python3 bindings/python/examples/decode_step.py tests/manifest/data/decode_step.mlir
"""
import sys

import numpy as np

import neuronmem as nm


def main(path):
    with nm.Manifest.load_file(path) as manifest, nm.Client(num_cores=2) as client:
        device = client.devices[0]
        args = manifest.arguments
        allocations, arrays = [], []
        for a in args:
            if a.dtype is None:
                raise SystemExit(f"argument {a.index} ({a.element_type}) has no buffer element type")
            if a.memory_kind == nm.MemoryKind.PINNED_HOST:  # decode metadata: written where the device reads it
                alloc = client.host_allocate(max(1, int(np.prod(a.shape)) * a.dtype.itemsize))
                allocations.append(alloc)
                arr = alloc.as_numpy(a.dtype, a.shape)
            else:
                arr = np.empty(a.shape, a.dtype)
            arr[...] = (np.arange(arr.size) % 251).reshape(a.shape)
            arrays.append(arr)
        buffers, ready = manifest.upload_arguments(device, arrays, nm.HostBufferSemantics.IMMUTABLE_ZERO_COPY)
        ready.wait()
        for a, buf, arr in zip(args, buffers, arrays):
            back = buf.to_numpy()
            if not np.array_equal(back, arr) or buf.memory.kind != a.memory_kind:
                raise SystemExit(f"argument {a.index}: wrong content or placement")
            print(f"{a.name}: {a.element_type}{list(a.shape)} in {buf.memory!r}"
                  f"{' (zero-copy)' if buf.is_zero_copy else ''}")
        for i, r in enumerate(manifest.results):
            print(f"result {i} ({r.name}) will live in {manifest.result_memory(device, i)!r}")
        for buf in buffers:
            buf.close()
        del arrays, arr
        for alloc in allocations:
            alloc.close()
        print(f"all {len(args)} arguments uploaded and read back")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/manifest/data/decode_step.mlir")
