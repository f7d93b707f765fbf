#!/bin/sh
# Fails (exit 1) if the shared library exports a defined symbol without the neuronmem_ prefix, or exports
# no neuronmem_ symbol at all. Usage: check_exports.sh LIBRARY.so
set -eu
lib="$1"
symbols=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//')
bad=$(printf '%s\n' "$symbols" | grep -v '^neuronmem_' | grep -v '^$' || true)
if [ -n "$bad" ]; then
  echo "exported symbols without the neuronmem_ prefix in $lib:" >&2
  printf '%s\n' "$bad" >&2
  exit 1
fi
count=$(printf '%s\n' "$symbols" | grep -c '^neuronmem_' || true)
if [ "$count" -eq 0 ]; then
  echo "no neuronmem_ symbols exported by $lib" >&2
  exit 1
fi
echo "$count exported symbols, all prefixed neuronmem_"
