#!/bin/sh
# Runs the libFuzzer binary for a bounded number of inputs, seeded from the checked-in corpus, writing any
# new inputs into a scratch directory in the build tree (never into the source tree).
# Usage: run_libfuzzer.sh FUZZER WORKDIR SEED_CORPUS [libFuzzer flags...]
set -eu
fuzzer="$1"; work="$2"; seeds="$3"; shift 3
mkdir -p "$work"
exec "$fuzzer" "$@" "$work" "$seeds"
