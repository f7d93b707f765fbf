"""Hostile inputs through the Python binding (issue 23): ints the C types cannot hold (ctypes would mask them:
an offset of 2**64 wrote element 0), kernel names with a NUL, runaway executions stopped by cancel and
deadlines."""
import time
import unittest

import numpy as np

import neuronmem as nm
from neuronmem import MemoryKind, NeuronMemError, StatusCode

ENDLESS = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.while(%v = %a) : tensor<4xf32>
    cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1.0> : tensor<4xf32>
      %n = stablehlo.add %v, %one : tensor<4xf32>
      stablehlo.return %n : tensor<4xf32>
    }
  return %0 : tensor<4xf32>
}
"""


class IntegerRangeTest(unittest.TestCase):
    def assertInvalid(self, fn):
        with self.assertRaises(NeuronMemError) as cm:
            fn()
        self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT, cm.exception.message)
        return cm.exception

    def test_ints_beyond_their_c_type_are_refused_not_masked(self):
        with nm.Client(num_cores=1, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            hbm = c.devices[0].memory_of_kind(MemoryKind.DEVICE)
            with nm.Buffer.from_numpy(np.arange(4, dtype=np.float32), hbm) as b:
                # An offset of 2**64 wrote element 0 before the check.
                self.assertInvalid(lambda: b.write(np.full(1, 9, np.float32), offset=1 << 64))
                self.assertInvalid(lambda: b.write(np.full(1, 9, np.float32), offset=-1))
                np.testing.assert_array_equal(b.to_numpy(), [0, 1, 2, 3])
            # An allocation of 2**64 + 4 elements was one of 4.
            err = self.assertInvalid(lambda: nm.Buffer.allocate(hbm, nm.ElementType.F32, [(1 << 64) + 4]))
            self.assertIn("dims[0]", err.message)
            self.assertInvalid(lambda: nm.Buffer.allocate(hbm, nm.ElementType.F32, [1 << 63]))
            # Function arguments: a host allocation of 2**64 + 64 bytes.
            self.assertInvalid(lambda: c.host_allocate((1 << 64) + 64))

    def test_a_wait_beyond_int64_nanoseconds_waits_forever(self):
        with nm.Client(num_cores=1, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            ev = c.create_event()
            # 584 years was 2**64 ns, masked to a short wait; now it is forever: the event completes first.
            import threading
            threading.Timer(0.2, lambda: ev.complete()).start()
            t0 = time.monotonic()
            ev.wait(584 * 365.25 * 86400)
            self.assertGreaterEqual(time.monotonic() - t0, 0.15)
            ev.close()

    def test_register_kernel_refuses_a_name_with_a_nul(self):
        with nm.Client(num_cores=1, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            err = self.assertInvalid(lambda: c.register_kernel("a\0b", lambda call: None))
            self.assertIn("NUL", err.message)
            self.assertInvalid(lambda: c.register_kernel(b"a\0", lambda call: None))


class StopTest(unittest.TestCase):
    def assertEndsWith(self, submitted, code):
        """Waits for an execution's done event, expects it failed with `code`, and closes what it returned."""
        results, done, run = submitted
        with self.assertRaises(NeuronMemError) as cm:
            done.wait(10)
        self.assertEqual(cm.exception.code, code, cm.exception.message)
        for r in results:
            r.close()
        done.close()
        run.close()

    def test_cancel_and_deadlines(self):
        with nm.Client(num_cores=1, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            dev = c.devices[0]
            hbm = dev.memory_of_kind(MemoryKind.DEVICE)
            with nm.Executable.compile(c, ENDLESS, filename="py.mlir") as exe, \
                    nm.Buffer.from_numpy(np.arange(4, dtype=np.float32), hbm) as a:
                t0 = time.monotonic()
                results, done, run = exe.execute(dev, [a])
                self.assertLess(time.monotonic() - t0, 2.0)  # execute returned: the loop is not on the caller
                time.sleep(0.05)
                self.assertFalse(done.is_ready)
                run.cancel()
                with self.assertRaises(NeuronMemError) as cm:
                    done.wait(10)
                self.assertEqual(cm.exception.code, StatusCode.CANCELLED)
                run.cancel()  # after the end: nothing changes
                self.assertEndsWith((results, done, run), StatusCode.CANCELLED)
                self.assertEndsWith(exe.execute(dev, [a], timeout=0.03), StatusCode.DEADLINE_EXCEEDED)
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute(dev, [a], timeout=-1)
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)

    def test_client_default_deadline(self):
        with nm.Client(num_cores=1, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20,
                       execution_timeout=0.03) as c:
            dev = c.devices[0]
            with nm.Executable.compile(c, ENDLESS, filename="py.mlir") as exe, \
                    nm.Buffer.from_numpy(np.arange(4, dtype=np.float32), dev.memory_of_kind(MemoryKind.DEVICE)) as a:
                self.assertEndsWith(exe.execute(dev, [a]), StatusCode.DEADLINE_EXCEEDED)


if __name__ == "__main__":
    unittest.main()
