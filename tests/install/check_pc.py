#!/usr/bin/env python3
"""Checks the generated neuronmem.pc the way a consumer meets it (issue 27):
  1. with nothing but that .pc on pkg-config's path (no tbb, liburing, nlohmann_json or eigen3 .pc files),
     `pkg-config --cflags --libs neuronmem` succeeds and gives exactly the library's own flags;
  2. placed in a relocated prefix (PREFIX/share/pkgconfig, where meson installs it), `--define-prefix` points
     every flag into that prefix, with no sed;
  3. `--static --libs` adds what linking a static libneuronmem.a needs.
Usage: check_pc.py BUILD_DIR/meson-private/neuronmem.pc"""
import os
import shutil
import subprocess
import sys
import tempfile


def pkg_config(pc_dir, *args):
    # PKG_CONFIG_LIBDIR replaces the default search path: only pc_dir is looked in.
    env = dict(os.environ, PKG_CONFIG_LIBDIR=pc_dir, PKG_CONFIG_PATH="")
    r = subprocess.run(["pkg-config", *args, "neuronmem"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: pkg-config {' '.join(args)} neuronmem with only {pc_dir} on the path: {r.stderr.strip()}")
    return r.stdout.split()


def variable(pc_dir, name, *args):
    return pkg_config(pc_dir, *args, f"--variable={name}")[0]


def main():
    pc = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        alone = os.path.join(tmp, "alone")
        os.mkdir(alone)
        shutil.copy(pc, alone)
        flags = pkg_config(alone, "--cflags", "--libs")
        includedir, libdir = variable(alone, "includedir"), variable(alone, "libdir")
        want = [f"-I{includedir}", f"-L{libdir}", "-lneuronmem"]
        # pkg-config drops -I/usr/include and -L/usr/lib... for system prefixes; the default prefix is /usr/local.
        if sorted(flags) != sorted(want):
            failures.append(f"--cflags --libs gave {flags}, expected {want} (the library's own flags only)")
        print("alone:", " ".join(flags))

        prefix = os.path.join(tmp, "moved", "prefix")
        pc_dir = os.path.join(prefix, "share", "pkgconfig")
        os.makedirs(pc_dir)
        shutil.copy(pc, pc_dir)
        flags = pkg_config(pc_dir, "--define-prefix", "--cflags", "--libs")
        print("relocated:", " ".join(flags))
        for f in flags:
            if f.startswith(("-I", "-L")) and not f[2:].startswith(prefix + os.sep):
                failures.append(f"--define-prefix left {f} outside the relocated prefix {prefix}")
        if not any(f == f"-I{prefix}/include" for f in flags):
            failures.append(f"--define-prefix: no -I{prefix}/include in {flags}")

        static = pkg_config(alone, "--static", "--libs")
        print("static:", " ".join(static))
        for lib in ["-lneuronmem", "-luring", "-ltbb", "-lfabric", "-lstdc++"]:
            if lib not in static:
                failures.append(f"--static --libs lacks {lib}: {static}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
