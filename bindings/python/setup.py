"""Build step of the package (pyproject.toml holds its metadata): records where the installed libneuronmem is, so
`import neuronmem` finds it with no environment variable. The libdir comes from $NEURONMEM_LIBDIR, else from
`pkg-config --variable=libdir neuronmem` (the installed prefix's neuronmem.pc); if neither is there, nothing is
recorded and neuronmem/_capi.py searches at run time."""
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py


def installed_libdir():
    libdir = os.environ.get("NEURONMEM_LIBDIR")
    if not libdir:
        try:
            libdir = subprocess.run(["pkg-config", "--variable=libdir", "neuronmem"], capture_output=True, text=True,
                                    check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
    return os.path.abspath(libdir) if libdir else None


class BuildPy(build_py):
    def run(self):
        super().run()
        libdir = installed_libdir()
        target = os.path.join(self.build_lib, "neuronmem", "_install.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written by setup.py at install time: the libdir of the libneuronmem it was installed for."""\n')
            f.write(f"LIBDIR = {libdir!r}\n")
        print(f"neuronmem: recorded libdir {libdir}")


setup(cmdclass={"build_py": BuildPy})
