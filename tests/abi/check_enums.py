#!/usr/bin/env python3
"""The public enums are append-only (include/neuronmem/*.h say so): checks the headers against the values
recorded in tests/abi/enums.txt. Every recorded constant must still exist with its value; a constant the record
lacks must be recorded (a new value is a deliberate ABI addition: append it to the file) and must be larger than
every recorded value of its enum (appended, not inserted or renumbered). *_FORCE_32 is left out.

usage: check_enums.py RECORD HEADER...     (--print HEADER... prints the record of the headers)"""
import re
import sys


def parse_headers(headers):
    """{enum name: {constant: value}} of every `typedef enum name { ... }` with explicit values."""
    enums = {}
    for h in headers:
        text = re.sub(r"/\*.*?\*/", "", open(h, encoding="utf-8").read(), flags=re.S)
        for m in re.finditer(r"typedef\s+enum\s+(\w+)\s*\{(.*?)\}", text, re.S):
            consts = {}
            for item in m.group(2).split(","):
                item = item.strip()
                if not item:
                    continue
                name, eq, value = item.partition("=")
                if not eq:
                    sys.exit(f"{h}: {m.group(1)}: {name.strip()} has no explicit value")
                name = name.strip()
                if not name.endswith("_FORCE_32"):
                    consts[name] = int(value.strip(), 0)
            enums[m.group(1)] = consts
    return enums


def parse_record(path):
    enums = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 3:
            sys.exit(f"{path}:{n}: expected 'enum CONSTANT value'")
        enums.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return enums


def main(argv):
    if len(argv) > 1 and argv[1] == "--print":
        for enum, consts in parse_headers(argv[2:]).items():
            for name, value in sorted(consts.items(), key=lambda kv: kv[1]):
                print(f"{enum} {name} {value}")
        return 0
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    record, headers = parse_record(argv[1]), parse_headers(argv[2:])
    errors = []
    for enum, consts in record.items():
        now = headers.get(enum)
        if now is None:
            errors.append(f"enum {enum} is recorded but no header defines it")
            continue
        for name, value in consts.items():
            if name not in now:
                errors.append(f"{name} ({enum} = {value}) was removed or renamed")
            elif now[name] != value:
                errors.append(f"{name} changed value: {value} recorded, {now[name]} now")
    for enum, consts in headers.items():
        recorded = record.get(enum, {})
        top = max(recorded.values(), default=-1)
        for name, value in sorted(consts.items(), key=lambda kv: kv[1]):
            if name in recorded:
                continue
            if value <= top:
                errors.append(f"{name} = {value} is not appended: {enum} already has values up to {top}")
            errors.append(f"{name} = {value} ({enum}) is not in {argv[1]}: append '{enum} {name} {value}'")
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"{sum(len(c) for c in headers.values())} constants of {len(headers)} enums match {argv[1]}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
