"""What a new user meets (issue 27): a caught error does not keep handles alive, messages use the binding's names,
leaving a client's `with` block closes what is still open (or close() names it), np.asarray(buffer), useful
reprs, enums printed as names, and the installed package."""
import gc
import importlib.metadata
import os
import unittest

import numpy as np

import neuronmem as nm
from neuronmem import ArgumentPlacement, ElementType, MemoryKind, NeuronMemError, StatusCode

# The weights must live in pinned_host: uploading them to device memory fails execute (strict placement).
TEXT = """func.func @main(%w: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %w, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _failing_step(client, exe):
    """Makes two buffers in this frame and raises from execute (the weights in the wrong memory)."""
    dev = client.devices[0]
    w = nm.Buffer.from_numpy(np.ones(4, np.float32), dev.default_memory)
    x = nm.Buffer.from_numpy(np.ones(4, np.float32), dev.default_memory)
    exe.execute(dev, [w, x])


class UsabilityTest(unittest.TestCase):
    def test_caught_error_does_not_keep_the_failed_calls_buffers(self):
        gc.disable()  # only reference counting: a cycle would keep the frames (and buffers) alive
        try:
            c = nm.Client(num_cores=1, device_bytes_per_core=1 << 20, pinned_host_bytes=32 << 20)
            exe = nm.Executable.compile(c, TEXT)
            try:
                _failing_step(c, exe)
            except NeuronMemError as e:
                self.assertEqual(e.code, StatusCode.FAILED_PRECONDITION)
            exe.close()
            self.assertEqual(c.open_handles(), [])
            c.close()  # refused with "the client still has 2 buffer(s)" while the cycle held them
            self.assertTrue(c.closed)
        finally:
            gc.enable()

    def test_messages_use_python_names(self):
        with nm.Client(num_cores=1, device_bytes_per_core=1 << 20, pinned_host_bytes=32 << 20) as c:
            exe = nm.Executable.compile(c, TEXT)
            dev = c.devices[0]
            w = nm.Buffer.from_numpy(np.ones(4, np.float32), dev.default_memory)
            with self.assertRaises(NeuronMemError) as cm:
                exe.execute(dev, [w, w])
            self.assertIn("ArgumentPlacement.AUTO_COPY", str(cm.exception))
            self.assertNotIn("NEURONMEM_", str(cm.exception))
            self.assertIn("NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY", cm.exception.c_message)
            # The library's refusal to destroy a client with buffers names Buffer.close() and the open buffer.
            exe.close()
            with self.assertRaises(NeuronMemError) as cm:
                c.close()
            self.assertIn("Buffer.close()", cm.exception.message)
            self.assertNotIn("neuronmem_buffer_destroy", cm.exception.message)
            self.assertIn("still open: <neuronmem.Buffer F32[4] in", cm.exception.message)
            self.assertFalse(c.closed)
        self.assertTrue(c.closed)  # the with block closed the buffer and the executable, then the client
        self.assertTrue(w.closed and exe.closed)

    def test_exit_closes_open_handles_and_keeps_the_original_error(self):
        with self.assertRaises(ZeroDivisionError):
            with nm.Client(num_cores=1, device_bytes_per_core=1 << 20, pinned_host_bytes=32 << 20) as c:
                b = nm.Buffer.from_numpy(np.arange(4, dtype=np.int32), c.devices[0].default_memory)
                h = c.host_allocate(64)
                1 / 0
        self.assertTrue(c.closed and b.closed and h.closed)

    def test_array_and_repr(self):
        with nm.Client(num_cores=1, device_bytes_per_core=1 << 20, pinned_host_bytes=32 << 20) as c:
            mem = c.devices[0].memory_of_kind(MemoryKind.PINNED_HOST)
            b = nm.Buffer.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), mem)
            a = np.asarray(b)
            self.assertEqual(a.shape, (2, 3))
            np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))
            self.assertEqual(np.asarray(b, dtype=np.float64).dtype, np.float64)
            self.assertRegex(repr(b), r"^<neuronmem\.Buffer F32\[2, 3\] in .*pinned_host.*>$")
            self.assertRegex(repr(c), r"^<neuronmem\.Client 1 device\(s\), 1 open handle\(s\)>$")
            exe = nm.Executable.compile(c, TEXT)
            self.assertEqual(repr(exe), "<neuronmem.Executable 2 parameter(s) -> 1 output(s)>")
            ev = c.create_event()
            self.assertEqual(repr(ev), "<neuronmem.Event pending>")
            ev.complete()
            self.assertEqual(repr(ev), "<neuronmem.Event ready>")
            ev.close()
            m = nm.Manifest.load_text(TEXT)
            self.assertEqual(repr(m), "<neuronmem.Manifest of @main: 2 argument(s), 1 result(s)>")
            m.close()
            self.assertEqual(repr(m), "<neuronmem.Manifest closed>")
        self.assertEqual(repr(b), "<neuronmem.Buffer closed>")
        self.assertEqual(repr(c), "<neuronmem.Client closed>")

    def test_enums_print_as_names(self):
        self.assertEqual(str(StatusCode.INVALID_ARGUMENT), "StatusCode.INVALID_ARGUMENT")
        self.assertEqual(f"{StatusCode.NOT_FOUND}", "StatusCode.NOT_FOUND")
        self.assertEqual(str(ElementType.F32), "ElementType.F32")
        self.assertEqual(str(ArgumentPlacement.AUTO_COPY), "ArgumentPlacement.AUTO_COPY")
        self.assertEqual(int(StatusCode.INVALID_ARGUMENT), 3)  # still the C values
        err = NeuronMemError(StatusCode.NOT_FOUND, "x")
        self.assertEqual(str(err.code), "StatusCode.NOT_FOUND")
        self.assertEqual(str(err), "NOT_FOUND: x")


class DocsExampleTest(unittest.TestCase):
    def test_docs_example(self):
        """docs/bindings.md's Python example runs from the repository's root and prints what it says."""
        import re
        import subprocess
        import sys

        from . import support
        with open(os.path.join(support.ROOT, "docs", "bindings.md"), encoding="utf-8") as f:
            text = f.read()
        code = text[text.index("```python\n") + len("```python\n"):]
        code = code[:code.index("```")]
        expected = [m.strip() for m in re.findall(r"# prints (.*)$", code, re.M)]
        self.assertEqual(len(expected), 2)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        r = subprocess.run([sys.executable, "-c", code], cwd=support.ROOT, capture_output=True, text=True, env=env,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), expected)


class PackageTest(unittest.TestCase):
    """scripts/test-bindings.sh pip-installs the package into a venv and sets NEURONMEM_INSTALLED_PACKAGE to that
    venv: the tests must then run against the installed copy, which finds the library by itself."""

    def test_installed_package(self):
        venv = os.environ.get("NEURONMEM_INSTALLED_PACKAGE")
        if not venv:
            self.skipTest("not run against an installed package (scripts/test-bindings.sh does)")
        self.assertTrue(os.path.realpath(nm.__file__).startswith(os.path.realpath(venv) + os.sep), nm.__file__)
        self.assertEqual(importlib.metadata.version("neuronmem"), nm.version_string())
        from neuronmem import _install
        self.assertTrue(_install.LIBDIR and os.path.isdir(_install.LIBDIR), _install.LIBDIR)
        self.assertNotIn("NEURONMEM_LIBRARY", os.environ)
