#!/usr/bin/env python3
"""neuronmem-decode on bad input: a clear error and a non-zero exit, never a crash (a signal).

usage: cli_bad_input.py NEURONMEM_DECODE DATA_FILE KERNEL_DATA_FILE"""
import subprocess
import sys

CASES = [
    # (arguments, expected exit code, text stderr must contain)
    (["--batch", "8", "--model", "{data}"], 1, "--batch 8 is larger than the block table's 4 rows"),
    (["--max-blocks", "2", "--block-size", "4", "--steps", "9"], 2,
     "longer than max-blocks 2 * block-size 4 = 8"),
    (["--model", "{data}", "--num-blocks", "1000", "--steps", "2"], 1, "past the KV cache's 64 blocks"),
    # The kernel variant's metadata is checked by the tool too (the kernel's own errors: kernel_variant_test).
    (["--model", "{kernel}", "--num-blocks", "1000", "--steps", "2"], 1, "past the KV cache's 64 blocks"),
    (["--batch", "8", "--model", "{kernel}"], 1,
     "--batch 8 is larger than the block table's 4 rows"),
    (["--attention", "paged"], 2, "--attention paged: unknown variant (gather or kernel)"),
    (["--batch", "x"], 2, "--batch needs an integer"),
    (["--model", "/nonexistent.mlir"], 1, "cannot read --model /nonexistent.mlir"),
]


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    tool, data, kernel = argv[1], argv[2], argv[3]
    failed = 0
    for args, code, text in CASES:
        args = [a.replace("{data}", data).replace("{kernel}", kernel) for a in args]
        r = subprocess.run([tool, "--no-manifest"] + args, capture_output=True, text=True, timeout=120)
        ok = r.returncode == code and text in r.stderr
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(args)} -> exit {r.returncode}: {r.stderr.strip()}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
