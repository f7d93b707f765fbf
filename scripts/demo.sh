#!/usr/bin/env bash
# The main job: builds libneuronmem (release build in build-release/) and runs neuronmem-info, then a
# round trip through every memory kind.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -d build-release ]; then
  meson setup build-release --buildtype=release -Dtests=false -Dbenchmarks=false >/dev/null
fi
ninja -C build-release >/dev/null
echo "== neuronmem-info"
build-release/tools/info/neuronmem-info
if [ -x build-release/tools/info/neuronmem-roundtrip ]; then
  echo
  echo "== round trip through each memory kind"
  build-release/tools/info/neuronmem-roundtrip
fi
