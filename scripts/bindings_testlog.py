#!/usr/bin/env python3
"""Runs one binding's test command and appends one result per test to <build>/meson-logs/testlog.json in
meson's format, so scripts/summarize_tests.py counts binding tests with the C ones.

    bindings_testlog.py BUILD_DIR SUITE FORMAT -- COMMAND...

FORMAT says how to read the command's output: `unittest` (python -m unittest -v), `gotest` (go test -json),
`cargo` (cargo test), `plain` (one test: the command's exit status). The command's whole output goes to
BUILD_DIR/meson-logs/SUITE.log. A non-zero exit with no failing test parsed counts as one failed test named
after the suite, and so does a command that ran no test. Exits 1 if anything failed."""
import json
import os
import re
import subprocess
import sys


def parse(fmt, out):
    results = []  # (name, ok)
    if fmt == "unittest":
        for m in re.finditer(r"^(test\w*) \(([\w.]+)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure)$",
                             out, re.M):
            where = m.group(2)  # python 3.11 prints the qualified name of the test itself
            name = where if where.endswith("." + m.group(1)) else f"{where}.{m.group(1)}"
            results.append((name, m.group(3) in ("ok", "expected failure")))
            if m.group(3).startswith("skipped"):
                results[-1] = (results[-1][0], False)  # the quality bar: no skipped check
    elif fmt == "gotest":
        for line in out.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("Test") and ev.get("Action") in ("pass", "fail", "skip"):
                results.append((f"{ev['Package']}.{ev['Test']}", ev["Action"] == "pass"))
    elif fmt == "cargo":
        for m in re.finditer(r"^test (\S+(?: - \S+)*(?: \(line \d+\))?) \.\.\. (ok|FAILED|ignored)$", out, re.M):
            results.append((m.group(1), m.group(2) == "ok"))
    return results


def main():
    build, suite, fmt = sys.argv[1:4]
    assert sys.argv[4] == "--"
    cmd = sys.argv[5:]
    logs = os.path.join(build, "meson-logs")
    os.makedirs(logs, exist_ok=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout
    with open(os.path.join(logs, suite + ".log"), "w") as f:
        f.write(out)
    results = [] if fmt == "plain" else parse(fmt, out)
    if fmt == "plain":
        results = [(suite, proc.returncode == 0)]
    elif not results:
        results = [(f"{suite} (no test ran)", False)]
    elif proc.returncode != 0 and all(ok for _, ok in results):
        results.append((f"{suite} (exit status {proc.returncode})", False))
    with open(os.path.join(logs, "testlog.json"), "a") as f:
        for name, ok in results:
            f.write(json.dumps({"name": name, "suite": [suite], "result": "OK" if ok else "FAIL"}) + "\n")
    failed = [name for name, ok in results if not ok]
    print(f"{suite}: {len(results) - len(failed)} passed, {len(failed)} failed")
    if failed:
        print("\n".join(f"  FAIL {n}" for n in failed))
        print(out[-6000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
