"""Paths and compiler flags the tests share: the repository's test data and the installed header."""
import os
import shlex
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DATA = os.path.join(ROOT, "tests", "manifest", "data")
LAYOUT_DUMP = os.path.join(ROOT, "bindings", "layout", "layout_dump.c")


def cflags():
    """-I flags of the installed header: $NEURONMEM_CFLAGS, else pkg-config's."""
    if "NEURONMEM_CFLAGS" in os.environ:
        return shlex.split(os.environ["NEURONMEM_CFLAGS"])
    out = subprocess.run(["pkg-config", "--cflags", "neuronmem"], capture_output=True, text=True, check=True)
    return shlex.split(out.stdout)


def include_dir():
    for flag in cflags():
        if flag.startswith("-I") and os.path.exists(os.path.join(flag[2:], "neuronmem", "neuronmem.h")):
            return flag[2:]
    raise RuntimeError("the installed neuronmem headers are not on the -I path: " + " ".join(cflags()))
