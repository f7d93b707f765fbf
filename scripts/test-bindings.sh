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

echo "-- python (ctypes + numpy): pip-installed offline into a venv, then tested as installed"
# As the README says: a venv that sees Debian's numpy, `pip install --no-build-isolation` from a copy of
# bindings/python (so the clone gets no build/ or egg-info), no index. The package records the libdir that
# pkg-config reports; the tests import the installed copy (neuronmem is imported before unittest puts
# bindings/python on sys.path) and PackageTest checks that they did.
venv="$out/python-venv"
rm -rf "$venv" "$out/python-src"
mkdir -p "$out/python-src"
cp -r bindings/python/pyproject.toml bindings/python/setup.py bindings/python/README.md bindings/python/neuronmem \
  "$out/python-src/"
if /usr/bin/python3 -m venv --system-site-packages "$venv" >"$out/python-venv.log" 2>&1 &&
   (env -u PYTHONPATH "$venv/bin/pip" install --no-build-isolation --no-index "$out/python-src" \
      >>"$out/python-venv.log" 2>&1); then
  NEURONMEM_INSTALLED_PACKAGE="$venv" log python unittest -- env -u PYTHONPATH "$venv/bin/python" -c \
    'import neuronmem, sys, unittest; print("neuronmem from", neuronmem.__file__, file=sys.stderr)
unittest.main(module=None, argv=["unittest", "discover", "-v", "-s", "bindings/python/tests",
                                "-t", "bindings/python"])' ||
    status=1
else
  cat "$out/python-venv.log"
  log python-install plain -- false
  status=1
fi

echo "-- go (cgo through pkg-config; go vet, then go test with cgocheck=2)"
(cd bindings/go && log go-vet plain -- go vet ./...) || status=1
(cd bindings/go && GODEBUG=cgocheck=2 log go gotest -- go test -count=1 -json ./...) || status=1

echo "-- rust (neuronmem-sys linked through pkg-config, the safe neuronmem crate; offline, no outside crate)"
(cd bindings/rust && log rust cargo -- cargo test --offline) || status=1
(cd bindings/rust && log rust-example plain -- cargo run --offline -q --example decode_step) || status=1

exit $status
