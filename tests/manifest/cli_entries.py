#!/usr/bin/env python3
"""Issue 12 item 7: a module without @main. neuronmem-manifest FILE fails and names the public functions and
--entry; --entry NAME chooses one; --all prints every public function's manifest (a JSON array with --json,
tables otherwise); --all with --entry is a usage error. Usage: cli_entries.py TOOL FILE"""
import json
import subprocess
import sys

tool, path = sys.argv[1], sys.argv[2]


def run(*args):
    return subprocess.run([tool, path, *args], capture_output=True, text=True, timeout=60)


p = run()
if p.returncode != 1 or "no function @main" not in p.stderr or "@prefill, @decode" not in p.stderr \
        or "--entry" not in p.stderr or "@helper" in p.stderr:
    sys.exit(f"without @main: exit {p.returncode}, stderr: {p.stderr[:400]}")

p = run("--entry", "decode", "--json")
if p.returncode != 0 or json.loads(p.stdout)["entry"] != "decode":
    sys.exit(f"--entry decode: exit {p.returncode}: {p.stdout[:300]} {p.stderr[:300]}")

p = run("--all", "--json")
if p.returncode != 0:
    sys.exit(f"--all --json: exit {p.returncode}: {p.stderr[:300]}")
manifests = json.loads(p.stdout)
if [m["entry"] for m in manifests] != ["prefill", "decode"]:
    sys.exit(f"--all --json entries: {[m.get('entry') for m in manifests]}")
moves = manifests[0]["moves"]
if len(moves) != 1 or moves[0]["from_kind"] != "pinned_host" or moves[0]["to_kind"] != "device":
    sys.exit(f"--all --json: prefill's moves are {moves}")
if manifests[1]["results"][0]["memory_kind"] != "unpinned_host":
    sys.exit(f"--all --json: decode's result is {manifests[1]['results'][0]}")

p = run("--all")
if p.returncode != 0 or p.stdout.count("module two_entries, entry @") != 2 or "entry @decode" not in p.stdout:
    sys.exit(f"--all table: exit {p.returncode}: {p.stdout[:600]}")

p = run("--all", "--entry", "decode")
if p.returncode != 2:
    sys.exit(f"--all --entry: expected a usage error (2), got {p.returncode}")
print("ok")
