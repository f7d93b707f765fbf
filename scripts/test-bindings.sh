#!/usr/bin/env bash
# Builds and tests the Python, Go and Rust bindings against an installed libneuronmem, as an outside user
# would: through the installed neuronmem.pc (its prefix pointed into the destdir) and the installed library.
#   scripts/test-bindings.sh BUILD_DIR DESTDIR
# Results go to BUILD_DIR/bindings/meson-logs/testlog.json (one line per test, meson's format; full output in
# <suite>.log next to it), which scripts/summarize_tests.py counts. Exits non-zero if any test failed.
set -uo pipefail
# shellcheck source=scripts/bindings-env.sh
source "$(dirname "$0")/bindings-env.sh"
cd "$root"
rm -rf "$out/meson-logs"
log() { python3 "$root/scripts/bindings_testlog.py" "$out" "$@"; }
status=0

echo "-- python (ctypes + numpy, /usr/bin/python3)"
log python unittest -- /usr/bin/python3 -m unittest discover -v -s bindings/python/tests -t bindings/python ||
  status=1

echo "-- go (cgo through pkg-config; go vet, then go test with cgocheck=2)"
(cd bindings/go && log go-vet plain -- go vet ./...) || status=1
(cd bindings/go && GODEBUG=cgocheck=2 log go gotest -- go test -count=1 -json ./...) || status=1

echo "-- rust (neuronmem-sys linked through pkg-config, the safe neuronmem crate; offline, no outside crate)"
(cd bindings/rust && log rust cargo -- cargo test --offline) || status=1
(cd bindings/rust && log rust-example plain -- cargo run --offline -q --example decode_step) || status=1

exit $status
