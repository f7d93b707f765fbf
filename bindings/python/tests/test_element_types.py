"""The element types from 13 on through the Python binding (issue 25): complex64/128 as numpy complex arrays,
the 8- and 6-bit floats as uint8 bit patterns, sizes as the C library gives them."""
import unittest

import numpy as np

import neuronmem as nm
from neuronmem import ElementType

COMPLEX = """func.func @main(%re: tensor<2xf32>, %im: tensor<2xf32>) -> tensor<2xcomplex<f32>> {
  %0 = stablehlo.complex %re, %im : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}
"""
TO_F8 = """func.func @main(%z: tensor<3xcomplex<f64>>) -> tensor<3xf8E4M3FN> {
  %0 = stablehlo.real %z : (tensor<3xcomplex<f64>>) -> tensor<3xf64>
  %1 = stablehlo.convert %0 : (tensor<3xf64>) -> tensor<3xf8E4M3FN>
  return %1 : tensor<3xf8E4M3FN>
}
"""


class ElementTypesTest(unittest.TestCase):
    def test_sizes_match_the_library(self):
        for t, size in {ElementType.C64: 8, ElementType.C128: 16, ElementType.F8E5M2: 1,
                        ElementType.F6E3M2FN: 1}.items():
            self.assertEqual(nm.element_type_size(t), size, t)
        for t in ElementType:  # every member is a type the library knows, read back as a dtype of its size
            self.assertGreater(nm.element_type_size(t), 0, t)
            self.assertEqual(nm._ELEMENT_TO_DTYPE[t].itemsize, nm.element_type_size(t), t)
        self.assertEqual(nm.element_type_size(30), 0)
        self.assertEqual([int(t) for t in ElementType], list(range(30)))

    def test_complex_result_and_argument(self):
        with nm.Client(num_cores=1) as c:
            dev = c.devices[0]
            exe = nm.Executable.compile(c, COMPLEX)
            self.assertEqual(exe.outputs[0].element_type, ElementType.C64)
            self.assertEqual(exe.outputs[0].dtype, np.complex64)
            re = nm.Buffer.from_numpy(np.array([1.5, -2], np.float32), exe.parameter_memory(dev, 0))
            im = nm.Buffer.from_numpy(np.array([0.25, 8], np.float32), exe.parameter_memory(dev, 1))
            (z,), done, run = exe.execute(dev, [re, im])
            done.wait()
            self.assertEqual(z.element_type, ElementType.C64)
            np.testing.assert_array_equal(np.asarray(z), np.array([1.5 + 0.25j, -2 + 8j], np.complex64))

            exe2 = nm.Executable.compile(c, TO_F8)
            arg = nm.Buffer.from_numpy(np.array([1, 0.5, -2], np.complex128), exe2.parameter_memory(dev, 0))
            self.assertEqual(arg.element_type, ElementType.C128)
            (f8,), done, run = exe2.execute(dev, [arg])
            done.wait()
            self.assertEqual(f8.element_type, ElementType.F8E4M3FN)
            out = f8.to_numpy()
            self.assertEqual(out.dtype, np.uint8)
            self.assertEqual(out.tolist(), [0x38, 0x30, 0xC0])

    def test_small_float_upload_as_bit_patterns(self):
        with nm.Client(num_cores=1) as c:
            mem = c.devices[0].default_memory
            b = nm.Buffer.from_numpy(np.array([0x08, 0x2A], np.uint8), mem, element_type=ElementType.F6E2M3FN)
            self.assertEqual(b.element_type, ElementType.F6E2M3FN)
            self.assertEqual(b.to_numpy().tolist(), [0x08, 0x2A])
            with self.assertRaises(nm.NeuronMemError):  # 2-byte elements are not f8
                nm.Buffer.from_numpy(np.zeros(2, np.uint16), mem, element_type=ElementType.F8E5M2)
