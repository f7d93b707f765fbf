#!/usr/bin/env python3
"""Issue 12 item 3: neuronmem-manifest loads a module with an op of an unknown dialect it cannot read, prints
the manifest and the warning (stderr, "warning: file:line:col: skipped ..."), also in the JSON form's
"warnings". Usage: cli_warnings.py TOOL FILE"""
import json
import subprocess
import sys

tool, path = sys.argv[1], sys.argv[2]
for args in ([], ["--json"], ["--all"]):
    p = subprocess.run([tool, path, *args], capture_output=True, text=True, timeout=60)
    want = f"warning: {path}:4:5: skipped 'acme.pack'"
    if p.returncode != 0 or p.stderr.count(want) != 1:
        sys.exit(f"{args}: exit {p.returncode}, stderr: {p.stderr[:400]}")
    if args == ["--json"]:
        m = json.loads(p.stdout)
        if len(m["warnings"]) != 1 or not m["warnings"][0].startswith(f"{path}:4:5: skipped 'acme.pack'"):
            sys.exit(f"--json warnings: {m['warnings']}")
        if m["moves"][0]["from_kind"] != "pinned_host":
            sys.exit(f"--json moves: {m['moves']}")
print("ok")
