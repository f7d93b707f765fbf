#!/usr/bin/env python3
"""neuronmem-decode --write-weights FILE, then --weights FILE: the weights reach device memory through
neuronmem_buffer_load_file (every byte of the file), and the tokens still match the C++ reference.

usage: cli_weights_file.py NEURONMEM_DECODE"""
import json
import os
import subprocess
import sys
import tempfile

SIZES = ["--batch", "2", "--layers", "1", "--max-blocks", "2", "--block-size", "4", "--hidden", "32", "--ffn", "48",
         "--steps", "6", "--vocab", "64"]


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tool = argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "weights.bin")
        w = subprocess.run([tool] + SIZES + ["--write-weights", path], capture_output=True, text=True, timeout=60)
        if w.returncode != 0 or not os.path.exists(path):
            print(f"FAIL --write-weights: exit {w.returncode}: {w.stderr}")
            return 1
        size = os.path.getsize(path)
        r = subprocess.run([tool] + SIZES + ["--weights", path, "--json", "--attention", "kernel"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(f"FAIL --weights: exit {r.returncode}: {r.stderr}")
            return 1
        summary = json.loads(r.stdout)
        weights = summary["weights"]
        ok = (weights["source"] == "file" and weights["bytes_loaded_from_file"] == size and
              summary["reference_check"] == "pass" and summary["implicit_copies"] == 0)
        print(f"{'ok  ' if ok else 'FAIL'} {size} bytes written; loaded {weights}; reference check "
              f"{summary['reference_check']}")
        # A file for other sizes is refused, naming both sizes.
        b = subprocess.run([tool] + SIZES[:-2] + ["--vocab", "32", "--weights", path],
                           capture_output=True, text=True, timeout=60)
        refused = b.returncode == 1 and f"has {size} bytes; the size flags need" in b.stderr
        print(f"{'ok  ' if refused else 'FAIL'} other sizes -> exit {b.returncode}: {b.stderr.strip()}")
        return 0 if ok and refused else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
