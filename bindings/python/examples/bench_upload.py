#!/usr/bin/python3
"""The Python side of the bindings' latency figures (scripts/bench-bindings.sh; the C baseline is
bindings/bench/upload_latency.c): a 256-byte f32[64] upload into core 0's device memory then close, and a
256-byte in-place write. Prints "python upload <ns/op>" and "python write <ns/op>" (best of 5 means)."""
import sys
import time

import numpy as np

import neuronmem as nm


def best_of(fn, n):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def main(n):
    data = np.arange(64, dtype=np.float32)
    with nm.Client(num_cores=2) as client:
        mem = client.lookup_memory(0)

        def upload():
            nm.Buffer.from_numpy(data, mem).close()

        print(f"python upload {best_of(upload, n):.1f}")
        with nm.Buffer.from_numpy(data, mem) as buf:
            print(f"python write {best_of(lambda: buf.write(data), n):.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
