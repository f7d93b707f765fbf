"""The Python binding over the installed library: the C tests' round trips and placement checks (tests/c,
tests/manifest), events and callbacks, and misuse that must raise NeuronMemError instead of crashing."""
import gc
import os
import tempfile
import threading
import unittest

import numpy as np

import neuronmem as nm
from neuronmem import ElementType, HostBufferSemantics, MemoryKind, NeuronMemError, StatusCode

from . import support

SMALL = dict(num_cores=3, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20)


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.client = nm.Client(**SMALL)

    def tearDown(self):
        gc.collect()
        self.client.close()

    def assertCode(self, code, fn, *args, **kwargs):
        with self.assertRaises(NeuronMemError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.code, code, cm.exception)
        self.assertTrue(cm.exception.message)
        return cm.exception

    def test_listing_and_memory_ids(self):
        c = self.client
        self.assertEqual(c.platform_name, "neuron")
        self.assertIn(nm.version_string(), c.platform_version)
        self.assertEqual(nm.version() >> 8, 0x0002)
        self.assertEqual(c.extensions, [])
        devices = c.devices
        self.assertEqual(len(devices), 3)
        self.assertEqual(len(c.memories), 9)
        for d, dev in enumerate(devices):
            desc = dev.describe()
            self.assertEqual((desc["id"], desc["local_id"], desc["kind"]), (d, d, "NC_v2"))
            self.assertEqual(desc["to_string"], f"NC_v2 (NeuronCore(id={d}, process_index=0, local_id={d}))")
            self.assertEqual(dev.default_memory.id, 2 * d)
            self.assertEqual(dev.default_memory.kind, MemoryKind.DEVICE)
            self.assertEqual(dev.memory_of_kind(MemoryKind.PINNED_HOST).id, 2 * d + 1)
            self.assertEqual(dev.memory_of_kind(MemoryKind.UNPINNED_HOST).id, 6 + d)
            self.assertEqual([m.id for m in dev.addressable_memories], [2 * d, 2 * d + 1, 6 + d])
            self.assertEqual(c.lookup_device(d), dev)
            self.assertEqual(dev.default_memory.addressable_devices, [dev])
            self.assertEqual(dev.default_memory.describe()["debug_string"], f"NeuronMemory(id={2 * d}, kind=device)")
            self.assertTrue(dev.default_memory.owner_is(c))
        self.assertEqual(c.lookup_memory(3).describe()["kind"], "pinned_host")
        self.assertCode(StatusCode.NOT_FOUND, c.lookup_memory, 9)
        self.assertCode(StatusCode.NOT_FOUND, c.lookup_device, 3)
        self.assertCode(StatusCode.INVALID_ARGUMENT, devices[0].memory_of_kind, 7)
        stats = devices[0].default_memory.stats()
        self.assertEqual(stats["capacity"], 2 << 20)
        self.assertEqual(stats["live_allocations"], 0)

    def test_host_allocation_is_pinned_and_freed_once(self):
        c = self.client
        with c.host_allocate(4096) as a:
            arr = a.as_numpy()
            arr[:] = 7
            self.assertTrue(c.host_is_pinned(a))
            self.assertTrue(c.host_is_pinned(arr))
            self.assertFalse(c.host_is_pinned(np.zeros(16)))
            del arr
        self.assertTrue(a.closed)
        a.close()  # twice: a no-op
        self.assertCode(StatusCode.INVALID_ARGUMENT, c.host_allocate, 0)
        self.assertCode(StatusCode.INVALID_ARGUMENT, c.host_allocate, 64, 3)
        self.assertCode(StatusCode.RESOURCE_EXHAUSTED, c.host_allocate, 1 << 40)

    def test_caller_completed_event_and_callbacks(self):
        ev = self.client.create_event()
        self.assertFalse(ev.is_ready)
        self.assertCode(StatusCode.FAILED_PRECONDITION, ev.error)
        self.assertCode(StatusCode.DEADLINE_EXCEEDED, ev.wait, 0.001)
        seen = []
        done = threading.Event()
        ev.on_ready(lambda err: (seen.append(err), done.set()))
        ev.complete()
        self.assertTrue(done.wait(5))
        self.assertEqual(seen, [None])
        ev.wait()
        self.assertIsNone(ev.error())
        self.assertCode(StatusCode.FAILED_PRECONDITION, ev.complete)
        # Already ready: the callback runs at once, on this thread.
        here = []
        ev.on_ready(lambda err: here.append(threading.current_thread()))
        self.assertEqual(here, [threading.current_thread()])
        ev.close()

    def test_event_completed_with_an_error_fails_its_dependents(self):
        c = self.client
        err = self.assertCode(StatusCode.NOT_FOUND, c.lookup_memory, 99)
        gate = c.create_event()
        mem = c.devices[0].default_memory
        with nm.Buffer.from_numpy(np.arange(4, dtype=np.int32), mem) as buf:
            done = buf.write(np.ones(4, np.int32), wait=[gate], asynchronous=True)
            self.assertFalse(done.is_ready)
            gate.complete(err)
            self.assertCode(StatusCode.NOT_FOUND, done.wait)
            self.assertEqual(done.error().code, StatusCode.NOT_FOUND)
            np.testing.assert_array_equal(buf.to_numpy(), np.arange(4))
        self.assertCode(StatusCode.INVALID_ARGUMENT, c.create_event().complete, ValueError("x"))
        made = c.create_event()  # an error the caller made gets a status of its own (neuronmem_status_create)
        made.complete(nm.NeuronMemError(StatusCode.ABORTED, "made here"))
        self.assertEqual((made.error().code, made.error().message), (StatusCode.ABORTED, "made here"))

    def test_upload_copy_read_round_trip_across_cores(self):
        c = self.client
        values = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.int32)
        dev0, dev1 = c.devices[0].default_memory, c.devices[1].default_memory
        with nm.Buffer.from_numpy(values, dev0) as buf:
            self.assertEqual(buf.shape, (2, 3))
            self.assertEqual(buf.element_type, ElementType.S32)
            self.assertEqual(buf.nbytes, 24)
            self.assertEqual(buf.memory, dev0)
            self.assertEqual(buf.device, c.devices[0])
            uploaded = buf.ready_event()
            with buf.copy_to(dev1, wait=[uploaded]) as moved:
                self.assertEqual(moved.memory, dev1)
                self.assertEqual(moved.device, c.devices[1])
                np.testing.assert_array_equal(moved.to_numpy(), values)
                out = bytearray(8)
                moved.read(out, offset=4, size=8)
                np.testing.assert_array_equal(np.frombuffer(out, np.int32), [-2, 3])

    def test_every_kind_to_every_kind(self):
        c = self.client
        kinds = list(MemoryKind)
        data = np.linspace(-1, 1, 300, dtype=np.float32).reshape(10, 30)
        for src_kind in kinds:
            for dst_kind in kinds:
                src_mem = c.devices[0].memory_of_kind(src_kind)
                dst_mem = c.devices[2].memory_of_kind(dst_kind)
                with nm.Buffer.from_numpy(data, src_mem) as a, a.copy_to(dst_mem) as b:
                    self.assertEqual(b.memory.kind, dst_kind)
                    np.testing.assert_array_equal(b.to_numpy(), data, err_msg=f"{src_kind}->{dst_kind}")

    def test_dtypes_strides_and_bf16(self):
        mem = self.client.devices[0].default_memory
        for dtype in (np.bool_, np.int8, np.uint16, np.int64, np.uint64, np.float16, np.float64):
            a = (np.arange(12) % 2).astype(dtype).reshape(3, 4)
            with nm.Buffer.from_numpy(a, mem) as b:
                self.assertEqual(b.dtype, np.dtype(dtype))
                np.testing.assert_array_equal(b.to_numpy(), a)
        strided = np.arange(64, dtype=np.int32).reshape(8, 8)[::2, 1::3]
        with nm.Buffer.from_numpy(strided, mem) as b:
            np.testing.assert_array_equal(b.to_numpy(), strided)
        with nm.Buffer.from_numpy(np.arange(8)[::-1].copy()[::-1], mem) as b:  # negative strides
            np.testing.assert_array_equal(b.to_numpy(), np.arange(8))
        bits = np.array([0x3F80, 0xC000], dtype=np.uint16)  # bf16 1.0, -2.0
        with nm.Buffer.from_numpy(bits, mem, element_type=ElementType.BF16) as b:
            self.assertEqual(b.element_type, ElementType.BF16)
            np.testing.assert_array_equal(b.to_numpy(), bits)
        self.assertCode(StatusCode.INVALID_ARGUMENT, nm.Buffer.from_numpy, np.zeros(2, np.float32), mem,
                        element_type=ElementType.BF16)
        self.assertCode(StatusCode.INVALID_ARGUMENT, nm.Buffer.from_numpy, np.zeros(2, np.longdouble), mem)

    def test_write_chunks_and_file_load(self):
        c = self.client
        mem = c.devices[1].default_memory
        with nm.Buffer.allocate(mem, np.int32, (4, 4)) as b:
            for row in range(4):
                b.upload_chunk(np.full(4, row, np.int32), offset=16 * row, is_last=row == 3)
            b.ready_event().wait()
            np.testing.assert_array_equal(b.to_numpy(), np.repeat(np.arange(4), 4).reshape(4, 4))
            self.assertCode(StatusCode.FAILED_PRECONDITION, b.upload_chunk, b"\0" * 4, 0)
            ev = b.write(np.array([9, 9], np.int32), offset=8, asynchronous=True)
            ev.wait()
            self.assertEqual(b.to_numpy()[0].tolist(), [0, 0, 9, 9])
            self.assertCode(StatusCode.OUT_OF_RANGE, b.write, b"\0" * 8, 60)
        with tempfile.NamedTemporaryFile() as f:
            f.write(np.arange(32, dtype=np.float32).tobytes())
            f.flush()
            with nm.Buffer.allocate(mem, ElementType.F32, (8,)) as b:
                b.load_file(f.name, file_offset=16)
                np.testing.assert_array_equal(b.to_numpy(), np.arange(4, 12, dtype=np.float32))
                b.load_file(f.name, file_offset=0, size=8, buffer_offset=24, asynchronous=True).wait()
                np.testing.assert_array_equal(b.to_numpy()[6:], [0, 1])
                self.assertCode(StatusCode.NOT_FOUND, b.load_file, f.name + ".missing")
                self.assertCode(StatusCode.OUT_OF_RANGE, b.load_file, f.name, file_offset=100)

    def test_zero_copy_from_the_pinned_arena(self):
        c = self.client
        pinned = c.devices[0].memory_of_kind(MemoryKind.PINNED_HOST)
        alloc = c.host_allocate(8 * 16 * 4)
        table = alloc.as_numpy(np.int32, (8, 16))
        table[:] = np.arange(128).reshape(8, 16)
        b = nm.Buffer.from_numpy(table, pinned, semantics=HostBufferSemantics.MUTABLE_ZERO_COPY)
        self.assertTrue(b.is_zero_copy)
        table[0, 0] = 1000  # the buffer is the memory
        self.assertEqual(b.to_numpy()[0, 0], 1000)
        # Not in the arena: copied instead.
        with nm.Buffer.from_numpy(np.zeros(4, np.int32), pinned,
                                  semantics=HostBufferSemantics.IMMUTABLE_ZERO_COPY) as copied:
            self.assertFalse(copied.is_zero_copy)
        # The view and the buffer keep the allocation: freeing it now is refused, not a dangling pointer.
        self.assertCode(StatusCode.FAILED_PRECONDITION, alloc.close)
        b.close()
        del table
        gc.collect()
        alloc.close()

    def test_batch_upload(self):
        c = self.client
        items = [(np.arange(i + 1, dtype=np.float32), c.devices[i].default_memory) for i in range(3)]
        bufs, ready = nm.Buffer.from_numpy_batch(items)
        ready.wait()
        for i, b in enumerate(bufs):
            self.assertEqual(b.memory.id, 2 * i)
            np.testing.assert_array_equal(b.to_numpy(), np.arange(i + 1))
            b.close()

    def test_misuse_is_an_error_value(self):
        c = self.client
        mem = c.devices[0].default_memory
        buf = nm.Buffer.from_numpy(np.arange(6, dtype=np.int32), mem)
        # A too-small output.
        self.assertCode(StatusCode.INVALID_ARGUMENT, buf.read, bytearray(8))
        self.assertCode(StatusCode.INVALID_ARGUMENT, buf.read, np.zeros(2, np.int32))
        self.assertCode(StatusCode.INVALID_ARGUMENT, buf.read, b"\0" * 64)  # read-only
        # Reading past the end.
        self.assertCode(StatusCode.OUT_OF_RANGE, buf.read, bytearray(64), offset=20, size=8)
        # A negative dimension.
        self.assertCode(StatusCode.INVALID_ARGUMENT, nm.Buffer.allocate, mem, np.float32, (-1, 3))
        # A memory and an event of another client.
        with nm.Client(num_cores=1, device_bytes_per_core=1 << 20) as other:
            self.assertCode(StatusCode.INVALID_ARGUMENT, buf.copy_to, other.devices[0].default_memory)
            foreign = other.create_event()
            self.assertCode(StatusCode.INVALID_ARGUMENT, buf.write, b"\0" * 4, wait=[foreign])
            foreign.close()
        # The client refuses to close while a buffer lives, and stays usable.
        self.assertCode(StatusCode.FAILED_PRECONDITION, c.close)
        np.testing.assert_array_equal(buf.to_numpy(), np.arange(6))
        # Deleted, then used.
        buf.delete()
        self.assertTrue(buf.is_deleted)
        self.assertCode(StatusCode.FAILED_PRECONDITION, buf.to_numpy)
        # Use after close.
        buf.close()
        buf.close()
        self.assertCode(StatusCode.FAILED_PRECONDITION, buf.to_numpy)
        self.assertCode(StatusCode.FAILED_PRECONDITION, lambda: buf.shape)
        ev = c.create_event()
        ev.close()
        self.assertCode(StatusCode.FAILED_PRECONDITION, ev.wait)
        self.assertCode(StatusCode.FAILED_PRECONDITION, buf.write, b"", wait=[ev])
        alloc = c.host_allocate(64)
        self.assertCode(StatusCode.FAILED_PRECONDITION, c.close)  # a live host allocation
        alloc.close()
        c.close()
        self.assertCode(StatusCode.FAILED_PRECONDITION, lambda: c.devices)
        self.assertCode(StatusCode.FAILED_PRECONDITION, mem.describe)
        self.assertCode(StatusCode.FAILED_PRECONDITION, nm.Buffer.from_numpy, np.zeros(2), mem)
        self.assertCode(StatusCode.FAILED_PRECONDITION, c.host_allocate, 64)
        c.close()


class ManifestTest(unittest.TestCase):
    def setUp(self):
        self.m = nm.Manifest.load_file(os.path.join(support.DATA, "decode_step.mlir"))

    def tearDown(self):
        self.m.close()

    def test_contents(self):
        m = self.m
        self.assertEqual(m.entry, ("jit_decode_step", "main"))
        counts = m.counts()
        self.assertEqual((counts["arguments"], counts["results"], counts["moves"], counts["host_compute"],
                          counts["kernels"], counts["channels"]), (4, 3, 3, 1, 1, 2))
        args = m.arguments
        self.assertEqual([a.memory_kind for a in args],
                         [MemoryKind.PINNED_HOST, MemoryKind.PINNED_HOST, MemoryKind.DEVICE, MemoryKind.DEVICE])
        self.assertEqual(args[0].shape, (8, 16))
        self.assertEqual(args[0].dtype, np.dtype(np.int32))
        self.assertEqual(args[0].name, "arg0")
        self.assertEqual(args[0].attributes.get("mhlo.sharding"), "{replicated}")
        self.assertTrue(args[2].buffer_donor)
        self.assertEqual(args[2].aliasing_output, 0)
        self.assertEqual(args[2].buffer_element_type, ElementType.BF16)
        self.assertEqual([r.memory_kind for r in m.results],
                         [MemoryKind.DEVICE, MemoryKind.PINNED_HOST, MemoryKind.DEVICE])
        self.assertEqual(m.results[0].name, "hidden")
        self.assertEqual({mv["spelling"] for mv in m.moves},
                         {"annotate_device_placement", "MoveToHost", "AwsNeuronMemoryPlacement"})
        k = m.kernels[0]
        self.assertEqual((k["func_name"], k["grid"], k["input_names"], k["output_names"]),
                         ("nki_tensor_add", (2, 1), ["a_input", "b_input"], ["c_output"]))
        self.assertEqual(m.host_compute[0]["function"], "main")
        self.assertEqual(m.channels[0]["source_target_pairs"], [(0, 1), (1, 0)])
        self.assertEqual(m.custom_call_targets.get("my-target.v2"), 1)
        self.assertEqual(m.warnings, [])
        with nm.Manifest.load_json(m.to_json()) as again:
            self.assertEqual(again.to_json(), m.to_json())

    def test_composites(self):
        with nm.Manifest.load_file(os.path.join(support.DATA, "composites.mlir")) as m:
            self.assertEqual(m.counts()["composites"], 2)
            first, second = m.composites
            self.assertEqual((first["function"], first["name"], first["decomposition"], first["version"]),
                             ("main", "my.scale_shift", "my.scale_shift", 3))
            self.assertEqual(first["attributes"], {"scale": "2.000000e+00 : f32", "tag": "fast"})
            self.assertEqual((first["line"], first["column"]), (5, 5))
            self.assertEqual((second["name"], second["decomposition"], second["version"], second["attributes"]),
                             ("ns.add", "add_impl", 0, {}))
        with nm.Manifest.load_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                                   "  return %a : tensor<2xf32>\n}\n") as plain:
            self.assertEqual(plain.composites, [])

    def test_entries_and_errors(self):
        with open(os.path.join(support.DATA, "two_entries.mlir")) as f:
            text = f.read()
        self.assertEqual(nm.list_entries(text), ["prefill", "decode"])
        with nm.Manifest.load_text(text, entry="decode") as m:
            self.assertEqual(m.results[0].memory_kind, MemoryKind.UNPINNED_HOST)
        with self.assertRaises(NeuronMemError) as cm:
            nm.Manifest.load_file(os.path.join(support.DATA, "bad_kind.mlir"))
        self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
        self.assertRegex(cm.exception.message, r"bad_kind\.mlir:\d+:\d+: ")
        with self.assertRaises(NeuronMemError) as cm:
            nm.Manifest.load_text(text)  # no @main
        self.assertEqual(cm.exception.code, StatusCode.NOT_FOUND)
        with self.assertRaises(NeuronMemError) as cm:
            nm.list_entries("func.func @f(", filename="x.mlir")
        self.assertTrue(cm.exception.message.startswith("x.mlir:1:"), cm.exception.message)
        self.assertRaises(NeuronMemError, nm.Manifest.load_json, "{}")

    def test_placement_and_upload_plan(self):
        m = self.m
        with nm.Client(num_cores=2, device_bytes_per_core=4 << 20, pinned_host_bytes=32 << 20) as c:
            dev = c.devices[1]
            self.assertEqual([m.argument_memory(dev, i).id for i in range(4)], [3, 3, 2, 2])
            self.assertEqual([m.result_memory(dev, i).id for i in range(3)], [2, 3, 2])
            with self.assertRaises(NeuronMemError) as cm:
                m.argument_memory(dev, 9)
            self.assertEqual(cm.exception.code, StatusCode.OUT_OF_RANGE)
            allocs, arrays = [], []
            for i, a in enumerate(m.arguments):
                nbytes = int(np.prod(a.shape)) * a.dtype.itemsize
                if a.memory_kind == MemoryKind.PINNED_HOST:
                    alloc = c.host_allocate(nbytes)
                    allocs.append(alloc)
                    arr = alloc.as_numpy(a.dtype, a.shape)
                else:
                    arr = np.empty(a.shape, a.dtype)
                arr[...] = np.arange(arr.size).reshape(a.shape) % 97 + i
                arrays.append(arr)
            bufs, ready = m.upload_arguments(dev, arrays, semantics=HostBufferSemantics.IMMUTABLE_ZERO_COPY)
            ready.wait()
            for i, (b, a) in enumerate(zip(bufs, arrays)):
                self.assertEqual(b.memory, m.argument_memory(dev, i))
                self.assertEqual(b.is_zero_copy, i < 2)
                np.testing.assert_array_equal(b.to_numpy(), a)
            with self.assertRaises(NeuronMemError) as cm:  # wrong shape: refused before the library reads it
                m.upload_arguments(dev, [arrays[0][:4]] + arrays[1:])
            self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
            with self.assertRaises(NeuronMemError) as cm:
                m.upload_arguments(dev, arrays[:3])
            self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
            for b in bufs:
                b.close()
            del arrays, a, arr
            gc.collect()
            for alloc in allocs:
                alloc.close()
        self.m.close()
        with self.assertRaises(NeuronMemError) as cm:
            self.m.counts()
        self.assertEqual(cm.exception.code, StatusCode.FAILED_PRECONDITION)


class ExampleTest(unittest.TestCase):
    def test_decode_step_example_runs(self):
        import subprocess
        import sys
        example = os.path.join(os.path.dirname(__file__), "..", "examples", "decode_step.py")
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), ".."))
        out = subprocess.run([sys.executable, example, os.path.join(support.DATA, "decode_step.mlir")],
                             capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("all 4 arguments uploaded and read back", out.stdout)


if __name__ == "__main__":
    unittest.main()
