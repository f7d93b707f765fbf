#!/usr/bin/env python3
"""Regression (issue 13 item 1): neuronmem-manifest on 20,000 nested modules must exit 1 with a
file:line:col error, not crash with a stack overflow. Usage: cli_rejects_deep_nesting.py TOOL"""
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "deep.mlir")
    with open(path, "w") as f:
        f.write("module {" * 20000 + "\n")
    p = subprocess.run([tool, path], capture_output=True, text=True, timeout=60)
    if p.returncode != 1:
        sys.exit(f"expected exit code 1, got {p.returncode}; stderr: {p.stderr[:300]}")
    if f"{path}:1:" not in p.stderr or "nesting deeper than 256 levels" not in p.stderr:
        sys.exit(f"unexpected message: {p.stderr[:300]}")
print("ok:", p.stderr.strip()[:120])
