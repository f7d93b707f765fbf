#!/usr/bin/env python3
"""The README quotes examples/use_from_c.c whole (the ```c block after the line naming that file): checks the
quote is the file, so the example the README shows is the one the test command compiles and runs.
Usage: check_readme_example.py README.md examples/use_from_c.c"""
import sys


def main():
    readme, example = sys.argv[1], sys.argv[2]
    lines = open(readme, encoding="utf-8").read().split("\n")
    name = "examples/use_from_c.c"
    for i, line in enumerate(lines):
        if name in line and i + 1 < len(lines) and lines[i + 1].strip() == "```c":
            end = lines.index("```", i + 2)
            quoted = "\n".join(lines[i + 2:end]) + "\n"
            break
    else:
        print(f"FAIL: {readme} has no ```c block right after a line naming {name}")
        return 1
    actual = open(example, encoding="utf-8").read()
    if quoted != actual:
        import difflib
        sys.stdout.writelines(difflib.unified_diff(actual.splitlines(True), quoted.splitlines(True), example,
                                                   readme + " (quoted)"))
        print(f"FAIL: the README's quote of {name} differs from the file (diff above)")
        return 1
    print(f"the README quotes {name} ({len(actual.splitlines())} lines) exactly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
