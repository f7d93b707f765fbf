#!/usr/bin/env python3
"""neuronmem-decode-gen writes the decode step as a StableHLO portable artifact (--format bytecode, or an
output name ending in .mlir.bc, at the newest target or --target), and neuronmem-decode --model ARTIFACT runs
it with the same tokens as the text model: both match the C++ reference token for token.

usage: cli_bytecode_model.py NEURONMEM_DECODE_GEN NEURONMEM_DECODE"""
import json
import os
import subprocess
import sys
import tempfile

SIZES = ["--batch", "2", "--layers", "1", "--max-blocks", "2", "--block-size", "4", "--hidden", "32", "--ffn", "48",
         "--vocab", "64"]
STEPS = ["--steps", "7"]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, timeout=120)


def decode(tool, model, attention):
    r = run([tool] + SIZES + STEPS + ["--model", model, "--json", "--attention", attention])
    if r.returncode != 0:
        return None, f"exit {r.returncode}: {r.stderr.decode(errors='replace')}"
    return json.loads(r.stdout), ""


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gen, tool = argv[1], argv[2]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = [  # (attention, generator flags, output name, producer)
            ("gather", [], "step.mlir.bc", b"StableHLO_v1.13.8\0"),
            ("gather", ["--format", "bytecode", "--target", "1.0.0"], "step_1_0_0.bin", b"StableHLO_v1.0.0\0"),
            ("kernel", ["--format", "bytecode", "--target", "1.9.0"], "step_kernel.bc", b"StableHLO_v1.9.0\0"),
        ]
        for attention, flags, name, producer in cases:
            text_path = os.path.join(tmp, attention + ".mlir")
            art_path = os.path.join(tmp, name)
            t = run([gen] + SIZES + ["--attention", attention, "-o", text_path])
            b = run([gen] + SIZES + ["--attention", attention] + flags + ["-o", art_path])
            if t.returncode or b.returncode:
                print(f"FAIL {name}: the generator failed: {t.stderr!r} {b.stderr!r}")
                failures += 1
                continue
            data = open(art_path, "rb").read()
            header_ok = data[:4] == b"ML\xefR" and producer in data[:40]
            text_run, e1 = decode(tool, text_path, attention)
            art_run, e2 = decode(tool, art_path, attention)
            if text_run is None or art_run is None:
                print(f"FAIL {name}: {e1} {e2}")
                failures += 1
                continue
            same = all(text_run[k] == art_run[k] for k in ("tokens_checked", "tokens_exact", "mismatches"))
            ok = (header_ok and same and art_run["reference_check"] == "pass" and
                  art_run["tokens_exact"] == art_run["tokens_checked"] > 0 and art_run["implicit_copies"] == 0)
            print(f"{'ok  ' if ok else 'FAIL'} {name} ({attention}, {len(data)} bytes, header {header_ok}): "
                  f"{art_run['tokens_exact']}/{art_run['tokens_checked']} tokens exact as from text "
                  f"({text_run['tokens_exact']}/{text_run['tokens_checked']})")
            failures += 0 if ok else 1
        # Text stays the default; a bad format or target is refused as a bad argument.
        t = run([gen] + SIZES)
        if t.returncode != 0 or b"module @" not in t.stdout or t.stdout.startswith(b"ML"):
            print("FAIL the default output is not text")
            failures += 1
        bad = ((["--format", "json"], "bad.mlir"), (["--format", "bytecode", "--target", "2.0.0"], "bad.bc"),
               (["--target", "1.0.0"], "bad.mlir"), (["--target", "1.x"], "bad.mlir.bc"))
        for flags, out in bad:
            r = run([gen] + SIZES + flags + ["-o", os.path.join(tmp, out)])
            ok = r.returncode == 2 and r.stderr
            print(f"{'ok  ' if ok else 'FAIL'} {' '.join(flags)}: exit {r.returncode}: "
                  f"{r.stderr.decode(errors='replace').strip()}")
            failures += 0 if ok else 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
