#!/usr/bin/env python3
"""neuronmem-decode --processes 2: the decode step tensor-parallel over two processes the tool spawns (libfabric on
loopback, a directory store): the tokens match the C++ reference of the whole model, the summary says
"processes": 2 and the bytes the all_reduces moved between the processes; bad combinations are refused (exit 2).

usage: cli_processes.py NEURONMEM_DECODE"""
import json
import os
import subprocess
import sys

SIZES = ["--batch", "2", "--layers", "2", "--steps", "6"]


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tool = argv[1]
    env = dict(os.environ, FI_PROVIDER=os.environ.get("FI_PROVIDER", "tcp"))
    failures = 0
    r = subprocess.run([tool, "--processes", "2", "--json"] + SIZES, capture_output=True, text=True, timeout=150,
                       env=env)
    if r.returncode != 0:
        print(f"FAIL --processes 2: exit {r.returncode}: {r.stderr}")
        return 1
    s = json.loads(r.stdout)
    # Each step: per layer, two all_reduces of [batch, hidden] f32 from the other process.
    want = 6 * 2 * 2 * 2 * 64 * 4
    ok = (s["processes"] == 2 and s["process_index"] == 0 and s["bytes_between_processes"] == want and
          s["reference_check"] == "pass" and s["mismatches"] == 0 and s["tokens_checked"] == 12)
    print(f"{'ok  ' if ok else 'FAIL'} --processes 2: processes {s['processes']}, bytes between processes "
          f"{s['bytes_between_processes']} (want {want}), reference check {s['reference_check']}")
    failures += not ok
    # The text summary says it too.
    t = subprocess.run([tool, "--processes", "2", "--no-manifest"] + SIZES, capture_output=True, text=True,
                       timeout=150, env=env)
    ok = t.returncode == 0 and "processes: 2; bytes between processes" in t.stdout and "PASS" in t.stdout
    print(f"{'ok  ' if ok else 'FAIL'} text summary: exit {t.returncode}")
    failures += not ok
    for args, needle in [(["--processes", "3"], "multiples of the 3 processes"),
                         (["--processes", "2", "--attention", "kernel"], "gather attention only"),
                         (["--processes", "2", "--store", "/tmp"], "go together"),
                         (["--processes", "2", "--store", "/tmp", "--process-index", "2"], "out of range"),
                         (["--processes", "0"], "needs an integer")]:
        b = subprocess.run([tool] + args, capture_output=True, text=True, timeout=30, env=env)
        ok = b.returncode == 2 and needle in b.stderr
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(args)}: exit {b.returncode}: {b.stderr.strip()}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
