#!/usr/bin/env python3
"""neuronmem-decode on bad input: a clear error and a non-zero exit, never a crash (a signal); a bad argument
exits 2, as --help says. Also what --help says, that progress lines reach a pipe as they are made, and that the
throughput leaves the reference check's time out (issue 27).

usage: cli_bad_input.py NEURONMEM_DECODE DATA_FILE KERNEL_DATA_FILE"""
import json
import os
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
    (["--model", "/nonexistent.mlir"], 2, "cannot read --model /nonexistent.mlir: No such file or directory"),
    (["--model", "{data_dir}"], 2, "is a directory; give a StableHLO file"),
]


def check_help(tool):
    """--help states one default for --num-blocks (the cache follows the batch) and the exit statuses."""
    out = subprocess.run([tool, "--help"], capture_output=True, text=True, timeout=60).stdout
    lines = [l for l in out.splitlines() if "--num-blocks" in l or "num-blocks" in l]
    ok = len(lines) == 1 and "(default batch * max-blocks)" in lines[0] and "2 for bad" in out
    print(f"{'ok  ' if ok else 'FAIL'} --help: {lines}")
    return ok


def check_progress_on_pipe(tool):
    """On a pipe, the header and the progress lines arrive while the loop runs, not at exit."""
    p = subprocess.Popen([tool, "--no-manifest", "--no-check", "--batch", "2", "--layers", "1", "--max-blocks", "64",
                          "--block-size", "16", "--steps", "1024"], stdout=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in p.stdout:
            seen.append(line.rstrip())
            if line.lstrip().startswith("step "):
                break
        running = p.poll() is None
    finally:
        p.kill()
        p.wait()
    ok = running and seen and seen[-1].lstrip().startswith("step ")
    print(f"{'ok  ' if ok else 'FAIL'} progress on a pipe while running: {seen[-1:] if seen else 'nothing'}"
          f" (still running: {running})")
    return ok


def check_throughput_without_check(tool):
    """tokens_per_s is the decode loop's: at batch 32, hidden 256 the C++ reference check takes several times a
    step, so a throughput that counted it would put the loop's time far above the sum of its steps."""
    r = subprocess.run([tool, "--json", "--batch", "32", "--hidden", "256", "--steps", "8"], capture_output=True,
                       text=True, timeout=120)
    try:
        s = json.loads(r.stdout)
    except ValueError:
        print(f"FAIL throughput: no JSON (exit {r.returncode}): {r.stderr.strip()}")
        return False
    loop_s = s["steps"] * s["batch"] / s["tokens_per_s"]
    steps_s = s["step_ms"]["total"] / 1000
    check_s = s["reference_check_ms"] / 1000
    ok = r.returncode == 0 and loop_s <= 1.2 * steps_s + 0.005 and check_s > 0
    print(f"{'ok  ' if ok else 'FAIL'} throughput {s['tokens_per_s']:.0f} tokens/s: the loop {loop_s * 1000:.1f} ms,"
          f" its {s['steps']} steps {steps_s * 1000:.1f} ms; reference check {check_s * 1000:.1f} ms apart")
    return ok


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    tool, data, kernel = argv[1], argv[2], argv[3]
    failed = 0
    for args, code, text in CASES:
        args = [a.replace("{data}", data).replace("{kernel}", kernel).replace("{data_dir}", os.path.dirname(data))
                for a in args]
        r = subprocess.run([tool, "--no-manifest"] + args, capture_output=True, text=True, timeout=120)
        ok = r.returncode == code and text in r.stderr
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(args)} -> exit {r.returncode}: {r.stderr.strip()}")
        failed += not ok
    failed += not check_help(tool)
    failed += not check_progress_on_pipe(tool)
    failed += not check_throughput_without_check(tool)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
