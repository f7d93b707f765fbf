#!/usr/bin/env bash
# The main job: builds libneuronmem (release build in build-release/), lists the client's devices and memory
# kinds (neuronmem-info), then runs an LLM decode loop (neuronmem-decode) with each paged-attention variant:
# metadata in pinned_host updated in place, KV caches donated, tokens checked against the C++ reference; and
# once from a StableHLO portable artifact (the model written as vhlo bytecode by neuronmem-decode-gen, as
# jax.export ships programs).
# Extra arguments go to one neuronmem-decode run instead (--help lists them), e.g.
# `bash scripts/demo.sh --batch 64 --steps 128 --attention kernel`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -d build-release ]; then
  meson setup build-release --buildtype=release -Dtests=false -Dbenchmarks=false >/dev/null
else
  # Again on an existing folder: options whose type changed (tests, benchmarks: now auto/true/false) are reset.
  meson configure build-release -Dtests=false -Dbenchmarks=false >/dev/null
fi
ninja -C build-release >/dev/null
echo "== neuronmem-info"
build-release/tools/info/neuronmem-info
echo
if [ $# -eq 0 ]; then
  # Both paged-attention variants: plain StableHLO gather, then the registered kernel reading the block table
  # where it lies in pinned_host.
  build-release/tools/decode/neuronmem-decode --batch 8 --layers 2 --steps 64
  echo
  build-release/tools/decode/neuronmem-decode --batch 8 --layers 2 --steps 64 --attention kernel --no-manifest
  echo
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  build-release/tools/decode/neuronmem-decode-gen --batch 8 --layers 2 --num-blocks 128 -o "$tmp/decode_step.mlir.bc"
  echo "== the same model from a StableHLO portable artifact" \
    "($(stat -c %s "$tmp/decode_step.mlir.bc") bytes of vhlo bytecode)"
  build-release/tools/decode/neuronmem-decode --batch 8 --layers 2 --num-blocks 128 --steps 16 --no-manifest \
    --model "$tmp/decode_step.mlir.bc"
  exit 0
fi
build-release/tools/decode/neuronmem-decode "$@"
