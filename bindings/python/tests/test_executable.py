"""Executables through the Python binding: compile, query, execute with a pinned_host argument read in place and
an intra-graph move, statistics, the strict placement error, misuse."""
import unittest

import numpy as np

import neuronmem as nm
from neuronmem import MemoryKind, NeuronMemError, StatusCode

TEXT = """func.func @main(%w: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.multiply %w, %x : tensor<4xf32>
  %1 = stablehlo.custom_call @MoveToHost(%0) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
"""


class ExecutableTest(unittest.TestCase):
    def test_compile_query_execute_statistics(self):
        with nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            dev = c.devices[1]
            with nm.Executable.compile(c, TEXT, filename="py.mlir") as exe:
                props = exe.properties()
                self.assertEqual((props["num_parameters"], props["num_outputs"], props["num_replicas"],
                                  props["num_explicit_moves"]), (2, 2, 2, 1))
                self.assertEqual([p.memory_kind for p in exe.parameters], [MemoryKind.PINNED_HOST, MemoryKind.DEVICE])
                self.assertEqual([o.memory_kind for o in exe.outputs], [MemoryKind.DEVICE, MemoryKind.PINNED_HOST])
                self.assertEqual(exe.outputs[1].shape, (4,))
                self.assertEqual(exe.parameter_memory(dev, 0).id, 3)
                self.assertEqual(exe.output_memory(dev, 0).id, 2)
                w = nm.Buffer.from_numpy(np.array([1, 2, 3, 4], np.float32), exe.parameter_memory(dev, 0))
                x = nm.Buffer.from_numpy(np.full(4, 2, np.float32), exe.parameter_memory(dev, 1))
                results, done, run = exe.execute(dev, [w, x])
                done.wait()
                np.testing.assert_array_equal(results[1].to_numpy(), [2, 4, 6, 8])
                self.assertEqual(results[1].memory.kind, MemoryKind.PINNED_HOST)
                st = run.stats()
                self.assertEqual((st["explicit_transfers"], st["explicit_bytes"], st["implicit_transfers"]),
                                 (1, 16, 0))
                tc = run.transfers(MemoryKind.DEVICE, MemoryKind.PINNED_HOST)
                self.assertEqual((tc["explicit_transfers"], tc["implicit_transfers"]), (1, 0))
                with self.assertRaises(NeuronMemError) as cm:
                    run.transfers(7, MemoryKind.DEVICE)
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
                # Strict placement: the weights in device memory are refused.
                misplaced = nm.Buffer.from_numpy(np.ones(4, np.float32), dev.default_memory)
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute(dev, [misplaced, x])
                self.assertEqual(cm.exception.code, StatusCode.FAILED_PRECONDITION)
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute(dev, [x])
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
                run.close()
                for b in results + [w, x, misplaced]:
                    b.close()
            with self.assertRaises(NeuronMemError) as cm:
                exe.properties()  # use after close
            self.assertEqual(cm.exception.code, StatusCode.FAILED_PRECONDITION)
            with self.assertRaises(NeuronMemError) as cm:
                nm.Executable.compile(c, "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                                         "  %0 = stablehlo.custom_call @nope(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
                                         "  return %0 : tensor<2xf32>\n}\n", filename="bad.mlir")
            self.assertEqual(cm.exception.code, StatusCode.UNIMPLEMENTED)
            self.assertIn("bad.mlir:", cm.exception.message)

    def test_compile_a_manifest(self):
        with nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            with nm.Manifest.load_text(TEXT) as m, nm.Executable.from_manifest(c, m) as exe:
                self.assertEqual(len(exe.parameters), 2)


if __name__ == "__main__":
    unittest.main()
