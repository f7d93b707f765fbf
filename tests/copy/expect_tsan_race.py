#!/usr/bin/env python3
"""Runs race_detect under ThreadSanitizer with the project's suppressions and passes only if TSan reports
the deliberate data race with a libneuronmem frame in its stack (so the suppressions hide oneTBB's false
positives, not our races). Usage: expect_tsan_race.py PROGRAM SUPPRESSIONS"""
import os
import subprocess
import sys

program, supp = sys.argv[1], sys.argv[2]
env = dict(os.environ)
env["TSAN_OPTIONS"] = f"halt_on_error=1 exitcode=66 suppressions={supp}"
proc = subprocess.run([program], env=env, capture_output=True, text=True, timeout=120)
report = proc.stderr
print(proc.stdout, end="")
print(report, end="", file=sys.stderr)
if "WARNING: ThreadSanitizer: data race" not in report:
    sys.exit(f"FAIL: no data race reported (exit {proc.returncode}): the suppressions hide races in our code")
if "copy_engine.cc" not in report and "fast_copy.cc" not in report:
    sys.exit("FAIL: a race was reported, but not the copy engine's write into the caller's memory")
if proc.returncode != 66:
    sys.exit(f"FAIL: expected TSan's exit code 66, got {proc.returncode}")
print("ok: ThreadSanitizer reported the deliberate race in the copy engine")
