#!/usr/bin/env bash
# A consumer project builds against libneuronmem as a Meson subproject (issue 27): a fresh project with this
# tree as subprojects/neuronmem (tests/subproject/consumer.meson.build, and the README's C example as its
# program). Checks that the subproject brings no tests, benchmarks, fuzzers or tools into the consumer's build
# (meson_options.txt: 'auto' is off in a subproject), then builds the consumer and runs it.
#   scripts/test-subproject.sh WORK_DIR      (made afresh; e.g. build-test/subproject-consumer)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$1"
rm -rf "$work"
mkdir -p "$work/subprojects"
cp "$root/tests/subproject/consumer.meson.build" "$work/meson.build"
cp "$root/examples/use_from_c.c" "$work/"
# A copy of the tracked files (not a symlink: a subproject is its own source tree, as a wrap would fetch it).
mkdir -p "$work/subprojects/neuronmem"
(cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work/subprojects/neuronmem")
meson setup "$work/build" "$work" --force-fallback-for=neuronmem >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log"; exit 1; }
python3 - "$work/build" <<'PY'
import json, subprocess, sys
build = sys.argv[1]
intro = lambda what: json.loads(subprocess.run(["meson", "introspect", build, what], check=True,
                                               capture_output=True, text=True).stdout)
tests, benchmarks, targets = intro("--tests"), intro("--benchmarks"), intro("--targets")
executables = sorted(t["name"] for t in targets if t["type"] == "executable")
print(f"{len(targets)} targets; executables: {executables}; {len(tests)} tests, {len(benchmarks)} benchmarks")
if tests or benchmarks or executables != ["use_from_c"]:
    sys.exit("FAIL: the subproject brings tests, benchmarks or programs into the consumer's build")
PY
ninja -C "$work/build" >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; exit 1; }
"$work/build/use_from_c"
