#!/usr/bin/env bash
# libneuronmem_pjrt.so exports exactly one symbol, GetPjrtApi (src/pjrt/neuronmem_pjrt.map): a frontend
# finds the plugin through it, and nothing of the library leaks into the frontend's process.
set -euo pipefail
lib="$1"
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWi]$/ { print $3 }' | sort -u)
if [ "$exports" != "GetPjrtApi" ]; then
  echo "$lib exports:"
  echo "$exports"
  echo "expected GetPjrtApi only"
  exit 1
fi
echo "$lib exports GetPjrtApi only"
