#!/usr/bin/env python3
"""Checks one layer of src/ against the layers it declares (src/meson.build): every `#include "X/..."` in
src/<layer>/ must name the layer itself or one it may use. Run by Meson at configure time, so an include
that runs up a layer (or sideways into an undeclared one) fails the build before anything compiles.

usage: check_layers.py SRC_DIR LAYER [ALLOWED_LAYER...]"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, layer, allowed = argv[1], argv[2], set(argv[3:]) | {argv[2]}
    layers = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    errors = []
    folder = os.path.join(src, layer)
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".h", ".cc")):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m and m.group(1) in layers and m.group(1) not in allowed:
                    errors.append(f"src/{layer}/{name}:{number}: includes \"{m.group(1)}/...\", but src/{layer} may "
                                  f"use only {', '.join(sorted(allowed - {layer})) or 'nothing'} (src/meson.build)")
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
