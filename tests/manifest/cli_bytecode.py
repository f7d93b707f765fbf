#!/usr/bin/env python3
"""Issue 22: neuronmem-manifest reads StableHLO portable artifacts (FILE.mlir.bc) as it reads text: the JSON
manifest of an artifact at each target version equals its text original's; a truncated artifact fails with
the byte offset. Usage: cli_bytecode.py TOOL BYTECODE_DIR TEXT_DIR (exit 77 when the folders are absent)."""
import json
import os
import subprocess
import sys
import tempfile

tool, bc_dir, text_dir = sys.argv[1], sys.argv[2], sys.argv[3]
if not os.path.isdir(bc_dir) or not os.path.isdir(text_dir):
    print(f"skip: {bc_dir} or {text_dir} is absent (../shared)")
    sys.exit(77)


def manifest(path):
    p = subprocess.run([tool, path, "--json"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"{path}: exit {p.returncode}: {p.stderr[:400]}")
    return json.loads(p.stdout)


def comparable(m):
    # The file name differs; everything else (kinds, shapes, moves, locations) must agree.
    return json.dumps(m, sort_keys=True).replace("<stdin>", "")


checked = 0
for stem in ("abs_int8_20_20", "argmax_float32_1", "gather_float32_4_6_int64_4_2", "sort_uint32_5_7"):
    text = manifest(os.path.join(text_dir, stem + ".mlir"))
    for name in sorted(os.listdir(bc_dir)):
        if not name.startswith(stem + ".") or not name.endswith(".mlir.bc"):
            continue
        got = manifest(os.path.join(bc_dir, name))
        if comparable(got) != comparable(text):
            sys.exit(f"{name}: manifest differs from its text's:\n"
                     f"{json.dumps(got)[:600]}\nvs\n{json.dumps(text)[:600]}")
        checked += 1
if checked < 4:
    sys.exit(f"only {checked} artifacts found")

with open(os.path.join(bc_dir, "abs_int8_20_20.current.mlir.bc"), "rb") as f:
    data = f.read()
with tempfile.TemporaryDirectory() as d:
    cut = os.path.join(d, "cut.mlir.bc")
    with open(cut, "wb") as f:
        f.write(data[:100])
    p = subprocess.run([tool, cut], capture_output=True, text=True, timeout=60)
    if p.returncode == 0 or f"{cut}: byte 100: expected" not in p.stderr:
        sys.exit(f"truncated artifact: exit {p.returncode}, stderr: {p.stderr[:400]}")
print(f"ok: {checked} artifacts")
