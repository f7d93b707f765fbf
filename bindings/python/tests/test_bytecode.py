"""StableHLO portable artifacts (issue 22) through the Python binding: the bytes pass through to the C API,
which reads them by their magic: the manifest equals the text original's, and the compiled program gives the
same results as the text's."""
import os
import unittest

import numpy as np

import neuronmem as nm

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "conformance")
BYTECODE = os.path.join(SHARED, "stablehlo-bytecode")
TEXT = os.path.join(SHARED, "stablehlo-testdata")


def read(path):
    with open(path, "rb") as f:
        return f.read()


@unittest.skipUnless(os.path.isdir(BYTECODE) and os.path.isdir(TEXT), "../shared/conformance is absent")
class BytecodeTest(unittest.TestCase):
    def run_program(self, c, data):
        with nm.Executable.compile(c, data, filename="a.mlir") as exe:
            results, done, _ = exe.execute(c.devices[0], [])
            done.wait()
            out = results[0].to_numpy().copy()
            for r in results:
                r.close()
        return out

    def test_manifest_and_results_match_the_text(self):
        # One program per target version: 1.0.0, 1.5.0, 1.9.0, current (1.13.8).
        stems = ("abs_float16_20_20", "abs_int16_20_20", "abs_int32_20_20", "abs_int8_20_20")
        with nm.Client(num_cores=1, device_bytes_per_core=8 << 20, pinned_host_bytes=32 << 20) as c:
            for stem in stems:
                text = read(os.path.join(TEXT, stem + ".mlir"))
                names = [n for n in os.listdir(BYTECODE) if n.startswith(stem + ".") and n.endswith(".mlir.bc")]
                self.assertEqual(len(names), 1, stem)
                data = read(os.path.join(BYTECODE, names[0]))
                self.assertEqual(data[:4], b"ML\xefR")
                self.assertEqual(nm.Manifest.load_text(data, filename="a.mlir").to_json(),
                                 nm.Manifest.load_text(text, filename="a.mlir").to_json())
                got, want = self.run_program(c, data), self.run_program(c, text)
                self.assertEqual(got.shape, (20, 20))
                np.testing.assert_array_equal(got, want)

    def test_written_artifacts_match_the_text(self):
        # Text -> nm.write_artifact -> the same manifest and results; the target names the producer.
        text = read(os.path.join(TEXT, "abs_int8_20_20.mlir"))
        with nm.Client(num_cores=1, device_bytes_per_core=8 << 20, pinned_host_bytes=32 << 20) as c:
            for target, producer in ((None, b"StableHLO_v1.13.8\0"), ("1.0.0", b"StableHLO_v1.0.0\0")):
                data = nm.write_artifact(text, target=target, filename="abs.mlir")
                self.assertEqual(data[:4], b"ML\xefR")
                self.assertIn(producer, data[:40])
                self.assertEqual(nm.Manifest.load_text(data, filename="a.mlir").to_json(),
                                 nm.Manifest.load_text(text, filename="a.mlir").to_json())
                np.testing.assert_array_equal(self.run_program(c, data), self.run_program(c, text))
        with self.assertRaises(nm.NeuronMemError) as e:
            nm.write_artifact(text, target="9.0.0")
        self.assertIn("outside the versions written", str(e.exception))
        chlo = read(os.path.join(TEXT, "acosh_bfloat16_20_20_chlo.mlir"))
        with self.assertRaises(nm.NeuronMemError) as e:
            nm.write_artifact(chlo)
        self.assertIn("chlo.", str(e.exception))

    def test_a_truncated_artifact_names_the_byte(self):
        data = read(os.path.join(BYTECODE, "abs_int8_20_20.current.mlir.bc"))[:100]
        with self.assertRaises(nm.NeuronMemError) as e:
            nm.Manifest.load_text(data, filename="cut.mlir.bc")
        self.assertIn("cut.mlir.bc: byte 100: expected", str(e.exception))


if __name__ == "__main__":
    unittest.main()
