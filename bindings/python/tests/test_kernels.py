"""Custom kernels written in Python: a plain custom call and an NKI call (AwsNeuronCustomNativeKernel) with a
grid, computed by Python callables over numpy views; a kernel's exception fails the execution with its message
and never reaches the library; the client keeps its kernels until it is destroyed."""
import base64
import gc
import json
import threading
import unittest

import numpy as np

import neuronmem as nm
from neuronmem import MemoryKind, NeuronMemError, StatusCode

SCALE = """func.func @main(%a: tensor<2x2xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<2x2xf32> {
  %0 = stablehlo.custom_call @py.scale2(%a) {backend_config = "opaque-config"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}
"""


def nki_text(func_name, grid):
    config = base64.b64encode(json.dumps({"func_name": func_name, "grid": grid}).encode()).decode()
    return f"""func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {{
  %0 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%a, %b)
      {{backend_config = "{config}"}}
      : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}}
"""


def run(client, exe, arrays, memories):
    dev = client.devices[0]
    bufs = [nm.Buffer.from_numpy(a, m) for a, m in zip(arrays, memories)]
    results, done, run_ = exe.execute(dev, bufs)
    try:
        done.wait()
        return results[0].to_numpy()
    finally:
        for b in bufs + results:
            b.close()
        run_.close()


class KernelTest(unittest.TestCase):
    def setUp(self):
        self.client = nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20)

    def tearDown(self):
        self.client.close()

    def test_plain_custom_call(self):
        seen = []

        def scale2(call):
            seen.append((call.target, call.name, call.backend_config, call.grid, call.grid_index, call.device,
                         call.input_kinds, call.output_kinds, call.inputs[0].flags.writeable))
            call.outputs[0][...] = 2 * call.inputs[0]

        self.client.register_kernel("py.scale2", scale2)
        del scale2
        gc.collect()  # the client keeps the callable
        c = self.client
        with nm.Executable.compile(c, SCALE, filename="py.mlir") as exe:
            a = np.array([[1, 2], [3, 4]], np.float32)
            got = run(c, exe, [a], [exe.parameter_memory(c.devices[0], 0)])
        np.testing.assert_array_equal(got, 4 * a)
        self.assertEqual(seen, [("py.scale2", "py.scale2", "opaque-config", (), (), 0, [MemoryKind.PINNED_HOST],
                                 [MemoryKind.DEVICE], False)])

    def test_nki_kernel_with_a_grid(self):
        points, threads = [], set()
        lock = threading.Lock()

        def nki_add(call):
            (p,) = call.grid_index
            with lock:
                points.append(p)
                threads.add(threading.get_ident())
            a, b = call.inputs
            out = call.outputs[0]
            out[2 * p:2 * p + 2] = a[2 * p:2 * p + 2] + b[2 * p:2 * p + 2]
            self.assertEqual(call.grid, (4,))
            self.assertEqual(call.target, "AwsNeuronCustomNativeKernel")

        c = self.client
        c.register_kernel("nki_add", nki_add)
        mem = c.devices[0].default_memory
        with nm.Executable.compile(c, nki_text("nki_add", [4])) as exe:
            a = np.arange(8, dtype=np.float32)
            b = 10 * np.arange(8, dtype=np.float32)
            got = run(c, exe, [a, b], [mem, mem])
        np.testing.assert_array_equal(got, a + b)
        self.assertEqual(sorted(points), [0, 1, 2, 3])

    def test_a_kernel_error_fails_the_execution(self):
        def failing(call):
            if call.grid_index == (2,):
                raise NeuronMemError(StatusCode.DATA_LOSS, "the tile was corrupt")
            call.outputs[0][...] = 0

        def broken(call):
            raise ZeroDivisionError("division by zero in the kernel")

        c = self.client
        c.register_kernel("nki_fail", failing)
        c.register_kernel("py_broken", broken)
        mem = c.devices[0].default_memory
        ones = np.ones(8, np.float32)
        for name, code, words in (("nki_fail", StatusCode.DATA_LOSS, ["kernel 'nki_fail' at grid point [2]",
                                                                     "the tile was corrupt"]),
                                  ("py_broken", StatusCode.UNKNOWN, ["ZeroDivisionError: division by zero"])):
            with nm.Executable.compile(c, nki_text(name, [3]), filename="k.mlir") as exe:
                with self.assertRaises(NeuronMemError) as cm:
                    run(c, exe, [ones, ones], [mem, mem])
                self.assertEqual(cm.exception.code, code)
                self.assertIn("k.mlir:2:", cm.exception.message)
                for w in words:
                    self.assertIn(w, cm.exception.message)
        # The client stays usable; an unregistered func_name fails at compile; bad registrations.
        with self.assertRaises(NeuronMemError) as cm:
            nm.Executable.compile(c, nki_text("missing", [1]))
        self.assertEqual(cm.exception.code, StatusCode.UNIMPLEMENTED)
        with self.assertRaises(NeuronMemError) as cm:
            c.register_kernel("", lambda call: None)
        self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
        with self.assertRaises(NeuronMemError) as cm:
            c.register_kernel("x", 42)
        self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
        # Targets the executor runs itself are refused, and the refused callable is not kept.
        before = len(nm._kernels)
        for name in ("MoveToHost", "annotate_device_placement", "AwsNeuronCustomNativeKernel", "check.expect_eq"):
            with self.assertRaises(NeuronMemError) as cm:
                c.register_kernel(name, lambda call: None)
            self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
            self.assertIn(name, cm.exception.message)
        self.assertEqual(len(nm._kernels), before)

    def test_kernels_are_released_with_the_client(self):
        before = len(nm._kernels)
        with nm.Client(num_cores=1) as c:
            c.register_kernel("k1", lambda call: None)
            c.register_kernel("k1", lambda call: None)  # replaced: both stay for executables compiled before
            self.assertEqual(len(nm._kernels), before + 2)
            exe = nm.Executable.compile(c, nki_text("k1", [1]))
            with self.assertRaises(NeuronMemError):
                c.close()  # refused while the executable lives: the kernels stay
            self.assertEqual(len(nm._kernels), before + 2)
            exe.close()
        self.assertEqual(len(nm._kernels), before)
        with self.assertRaises(NeuronMemError) as cm:
            c.register_kernel("k2", lambda call: None)
        self.assertEqual(cm.exception.code, StatusCode.FAILED_PRECONDITION)


if __name__ == "__main__":
    unittest.main()
