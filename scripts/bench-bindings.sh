#!/usr/bin/env bash
# The latency of a small upload (256-byte f32[64] into device memory, then destroy) and of a 256-byte in-place
# write, through C and through each binding (Python, Go, Rust), in one run against the installed library
# (docs/performance.md).
#   scripts/bench-bindings.sh BUILD_DIR DESTDIR     (e.g. build-test "$PWD/build-test/destdir" after test.sh)
set -euo pipefail
# shellcheck source=scripts/bindings-env.sh
source "$(dirname "$0")/bindings-env.sh"
cd "$root"
# shellcheck disable=SC2046
cc -std=c17 -O2 -Wall -Werror bindings/bench/upload_latency.c -o "$out/upload_latency" \
  $(pkg-config --cflags --libs neuronmem)
"$out/upload_latency" 200000
/usr/bin/python3 bindings/python/examples/bench_upload.py 20000
(cd bindings/go && go test -run '^$' -bench . -benchtime 200000x -count 5 ./neuronmem | awk '/^Benchmark/ {
  sub(/-[0-9]+$/, "", $1); if (!($1 in best) || $3 < best[$1]) best[$1] = $3 }
  END { printf "go upload %.1f\ngo write %.1f\n", best["BenchmarkUpload256"], best["BenchmarkWrite256"] }')
(cd bindings/rust && cargo run --offline -q --release --example bench_upload -- 200000)
