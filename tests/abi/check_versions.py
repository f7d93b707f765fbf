#!/usr/bin/env python3
"""Checks the library's exported symbols against the version script (src/neuronmem.map) and the public
headers: every exported symbol carries the version node that lists it, every listed symbol is exported,
no node lists a glob, and every NEURONMEM_API function declared in include/neuronmem/*.h is listed.

usage: check_versions.py LIBRARY.so MAP_FILE HEADER..."""
import re
import subprocess
import sys


def parse_map(path):
    text = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
    nodes = {}
    for m in re.finditer(r"(NEURONMEM_[0-9.]+)\s*\{(.*?)\}", text, re.S):
        body = m.group(2)
        glob = re.search(r"global:(.*?)(local:|$)", body, re.S)
        names = [n.strip() for n in (glob.group(1) if glob else "").split(";") if n.strip()]
        nodes[m.group(1)] = names
    return nodes


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":
            continue
        name, _, version = parts[2].partition("@@")
        if not version:
            name, _, version = parts[2].partition("@")
        symbols[name] = version
    return symbols


def declared(headers):
    names = set()
    for h in headers:
        text = open(h, encoding="utf-8").read()
        names.update(re.findall(r"NEURONMEM_API\b[^;{]*?\b(neuronmem_\w+)\s*\(", text, re.S))
    return names


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    lib, map_file, headers = argv[1], argv[2], argv[3:]
    nodes = parse_map(map_file)
    errors = []
    listed = {}
    for node, names in nodes.items():
        for n in names:
            if "*" in n or "?" in n:
                errors.append(f"{node} lists the glob '{n}': list each symbol in the node of its release")
            if n in listed:
                errors.append(f"{n} is listed in both {listed[n]} and {node}")
            listed[n] = node
    symbols = exported(lib)
    for name, version in sorted(symbols.items()):
        if not name.startswith("neuronmem_"):
            continue
        if name not in listed:
            errors.append(f"{name} is exported but in no node of {map_file}")
        elif version != listed[name]:
            errors.append(f"{name} is exported as {version or 'unversioned'}, the map lists it in {listed[name]}")
    for name, node in sorted(listed.items()):
        if name not in symbols:
            errors.append(f"{name} is listed in {node} but not exported")
    for name in sorted(declared(headers)):
        if name not in listed:
            errors.append(f"{name} is declared NEURONMEM_API in the headers but in no node of {map_file}")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print(f"{len(listed)} symbols in {len(nodes)} version nodes, all exported as listed and all declared")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
