#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, then
#   1. build-test/  debugoptimized gcc build, every suite (with the formatting check, suite 'format');
#   2. build-asan/  clang with ASan+UBSan (and the libFuzzer target), every suite;
#   3. build-tsan/  gcc with ThreadSanitizer, the 'concurrency' suite (with the multi-process tests of suite 'dist').
# After 1, the library is installed into build-test/destdir and a C program, the Python module, the Go package
# and the Rust crates are built and tested against it (scripts/test-bindings.sh; counted in the last line); a
# consumer project builds it as a Meson subproject (scripts/test-subproject.sh).
# Ends with one line "N passed, N failed" over all three runs; exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
jobs=$(nproc)
failed_steps=()

run_build() {  # name, meson setup args...
  local dir="$1"; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
  else
    # The options again: Meson resets an option whose type changed (tests, benchmarks, tools became
    # auto/true/false) to its default when it regenerates an existing folder.
    meson setup --reconfigure "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
  fi
  ninja -C "$dir" -j"$jobs" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; return 1; }
}

run_tests() {  # dir, meson test args...
  local dir="$1"; shift
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "$jobs" "$@"
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# LeakSanitizer (clang 14, glibc 2.36) crashes in its tracer ("Tracer caught signal 11", a fatal error, not a
# leak) at exit of a process that dlopen'ed a library with thread-local storage: BLIS (src/linalg) is one. Not
# scanning TLS as roots avoids it; what it adds are reports of the dynamic loader's own allocations (reachable
# only through the thread control blocks) and dlerror's per-thread buffer, which tests/lsan.supp names.
export LSAN_OPTIONS="use_tls=0 suppressions=$PWD/tests/lsan.supp"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"

echo "== [1/3] debugoptimized build, all suites"
if run_build build-test --buildtype=debugoptimized -Dbenchmarks=true; then
  run_tests build-test || failed_steps+=("tests")
else
  failed_steps+=("build")
fi

echo "== [1b] meson install, then build a C program against the installed header and neuronmem.pc"
install_check() {
  local dest="$PWD/build-test/destdir"
  rm -rf "$dest"
  meson install -C build-test --no-rebuild --destdir "$dest" >build-test/install.log 2>&1 || return 1
  local pc
  pc=$(find "$dest" -name neuronmem.pc | head -n1)
  [ -n "$pc" ] || return 1
  # As a consumer of a moved prefix would: only the library's own .pc on pkg-config's path (PKG_CONFIG_LIBDIR
  # replaces the default path, so no dependency's .pc can help), the prefix taken from where the .pc lies.
  local pcq=(env PKG_CONFIG_LIBDIR="$(dirname "$pc")" PKG_CONFIG_PATH= pkg-config --define-prefix)
  local flags libdir
  flags=$("${pcq[@]}" --cflags --libs neuronmem) || return 1
  libdir=$("${pcq[@]}" --variable=libdir neuronmem) || return 1
  case "$libdir" in "$dest"/*) ;; *) echo "--define-prefix gave libdir $libdir outside $dest"; return 1 ;; esac
  echo "installed: $flags"
  # shellcheck disable=SC2086
  cc -std=c17 -Wall -Wextra -Werror tests/c/api_test.c -o build-test/installed_api_test $flags || return 1
  LD_LIBRARY_PATH="$libdir" build-test/installed_api_test || return 1
  # The README's example (examples/use_from_c.c), built the way the README says.
  # shellcheck disable=SC2086
  cc -std=c17 -Wall -Wextra -Werror examples/use_from_c.c -o build-test/installed_example $flags || return 1
  LD_LIBRARY_PATH="$libdir" build-test/installed_example
}
if [ -f build-test/build.ninja ]; then
  install_check || failed_steps+=("install-check")
  echo "== [1d] a consumer project builds against the library as a Meson subproject (scripts/test-subproject.sh)"
  bash scripts/test-subproject.sh "$PWD/build-test/subproject-consumer" || failed_steps+=("subproject")
  echo "== [1c] the Python, Go and Rust bindings, built and tested against that installed prefix"
  bash scripts/test-bindings.sh build-test "$PWD/build-test/destdir" || failed_steps+=("bindings")
fi

echo "== [2/3] ASan+UBSan (clang), all suites"
if CC=clang CXX=clang++ run_build build-asan --buildtype=debugoptimized -Db_sanitize=address,undefined \
     -Db_lundef=false -Dbenchmarks=false -Dfuzzing=true \
     -Dc_args=-fno-sanitize-recover=all -Dcpp_args=-fno-sanitize-recover=all; then
  run_tests build-asan --timeout-multiplier 3 || failed_steps+=("asan-tests")
else
  failed_steps+=("asan-build")
fi

echo "== [3/3] ThreadSanitizer, 'concurrency' suite"
# It holds the multi-process tests too (tests/dist, pjrt-job): they fork from a single-threaded test process, so each
# child is a process of its own to TSan (halt_on_error makes a child that races exit with 66, and its test fail).
if run_build build-tsan --buildtype=debugoptimized -Db_sanitize=thread -Dbenchmarks=false -Dtools=false; then
  run_tests build-tsan --suite concurrency --timeout-multiplier 4 || failed_steps+=("tsan-tests")
else
  failed_steps+=("tsan-build")
fi

python3 scripts/summarize_tests.py build-test build-test/bindings build-asan build-tsan
if [ ${#failed_steps[@]} -ne 0 ]; then
  echo "failed steps: ${failed_steps[*]}"
  exit 1
fi
