#!/usr/bin/env python3
"""Regression (issue 13 items 2 and 3): neuronmem-manifest (plain and --all) on a FIFO with no writer, on
/dev/zero and on a directory must exit 1 at once with "only regular files", not block or read without end.
Usage: cli_rejects_non_regular.py TOOL"""
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero", tmp):
        for extra in ([], ["--all"]):
            try:
                p = subprocess.run([tool, path] + extra, capture_output=True, text=True, timeout=20)
            except subprocess.TimeoutExpired:
                sys.exit(f"{path} {extra}: the tool did not return within 20 s")
            if p.returncode != 1:
                sys.exit(f"{path} {extra}: expected exit code 1, got {p.returncode}; stderr: {p.stderr[:300]}")
            if "only regular files" not in p.stderr:
                sys.exit(f"{path} {extra}: unexpected message: {p.stderr[:300]}")
print("ok")
