#!/usr/bin/env bash
# The compiled peer for the programs issue 28 added (gen_programs.py: MLP blocks, softmaxes): each lowered by
# ../shared/tools/compiled-peer/lower.sh in every variant (loops, fused, vec, vecpoly: td/*.td.mlir here) and timed
# against the interpreter in one process by that folder's bench.c (built here against NEURONMEM_BUILD), as its
# run_micro.sh does for the first four programs. Never part of the test command: it needs StableHLO's tools
# (../shared/tools/compiled-peer/build_stablehlo_tools.sh) and writes only under WORKDIR.
#
# usage: run_peer.sh WORKDIR [PROGRAM...]   (default: every program; results in WORKDIR/logs/peer.log)
# env: PEER_TOOLS (the compiled-peer folder), STABLEHLO_OPT, LLVM_BIN (default /usr/lib/llvm-22/bin),
#      NEURONMEM_BUILD (this checkout's meson build dir, with src/libneuronmem.so built), REPS (scale, default 1)
set -euo pipefail
WORK=${1:?usage: run_peer.sh WORKDIR [PROGRAM...]}; shift
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
: "${PEER_TOOLS:?set PEER_TOOLS to ../shared/tools/compiled-peer}"; : "${STABLEHLO_OPT:?}"; : "${NEURONMEM_BUILD:?}"
export STABLEHLO_OPT LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
CC=${CC:-$(command -v clang || command -v clang-14 || echo gcc)}; export CC
mkdir -p "$WORK/programs" "$WORK/build" "$WORK/logs"
python3 "$HERE/gen_programs.py" "$WORK/programs"
for p in "$WORK"/programs/*.mlir; do  # the interpreter side (bench_peer) reads the copies in bench/peer/programs
  if ! cmp -s "$p" "$SRC/bench/peer/programs/$(basename "$p")"; then
    echo "bench/peer/programs/$(basename "$p") is stale: run gen_programs.py" >&2
    exit 1
  fi
done
gcc -O2 -std=gnu17 -I"$SRC/include" "$PEER_TOOLS/bench.c" -o "$WORK/build/bench" \
  -L"$NEURONMEM_BUILD/src" -lneuronmem -Wl,-rpath,"$NEURONMEM_BUILD/src" -ldl -lm
B=$WORK/build/bench
run() {  # program variant td reps bench-args...
  local p=$1 v=$2 td=$3 reps=$4; shift 4
  echo "=== $p $v $td ($(uptime | sed 's/.*load/load/'))"
  local log=$WORK/build/$p.$v.lower.log
  if ! "$PEER_TOOLS/lower.sh" "$WORK/programs/$p.mlir" "$WORK/build/$p.$v" "$v" $td > "$log" 2>&1; then
    echo "  lowering failed ($log): $(grep -m1 -i error "$log" || tail -1 "$log")"
    return 0
  fi
  grep total "$log"
  nice -n -10 "$B" --mlir "$WORK/programs/$p.mlir" --so "$WORK/build/$p.$v.so" \
    --reps $((reps * ${REPS:-1})) --warmup 3 "$@"
}
# Weights scaled by 1/sqrt(fan-in) (the activation sees values around +-1), as bench_peer's inputs.
MLP=(--in f32:64x1024:u-1,1 --in f32:1024x4096:u-0.03125,0.03125 --in f32:4096:u-1,1
     --in f32:4096x1024:u-0.015625,0.015625 --in f32:1024:u-1,1 --out f32:64x1024)
declare -A ARGS=([mlp_gelu_64x1024x4096]="${MLP[*]}" [mlp_silu_64x1024x4096]="${MLP[*]}"
                 [softmax_1024x1024]="--in f32:1024x1024:u-1,1 --out f32:1024x1024"
                 [softmax_64x4x256]="--in f32:64x4x256:u-1,1 --out f32:64x4x256")
declare -A TD=([mlp_gelu_64x1024x4096]=mlp [mlp_silu_64x1024x4096]=mlp
               [softmax_1024x1024]=softmax [softmax_64x4x256]=softmax)
declare -A N=([mlp_gelu_64x1024x4096]=20 [mlp_silu_64x1024x4096]=20 [softmax_1024x1024]=50 [softmax_64x4x256]=300)
# scalar loops: the MLP's matmuls take seconds per run that way
declare -A NLOOPS=([mlp_gelu_64x1024x4096]=3 [mlp_silu_64x1024x4096]=3 [softmax_1024x1024]=20 [softmax_64x4x256]=100)
PROGS=("$@")
[ ${#PROGS[@]} -gt 0 ] || PROGS=(mlp_gelu_64x1024x4096 mlp_silu_64x1024x4096 softmax_1024x1024 softmax_64x4x256)
{
for p in "${PROGS[@]}"; do
  # shellcheck disable=SC2086
  for v in loops fused; do run "$p" $v "" "${NLOOPS[$p]}" ${ARGS[$p]}; done
  # shellcheck disable=SC2086
  for v in vec vecpoly; do run "$p" $v "$HERE/td/${TD[$p]}.td.mlir" "${N[$p]}" ${ARGS[$p]}; done
done
} 2>&1 | tee -a "$WORK/logs/peer.log"
