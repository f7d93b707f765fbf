# Sourced by scripts/test-bindings.sh and scripts/bench-bindings.sh with $1 = BUILD_DIR, $2 = DESTDIR (a
# `meson install --destdir`): points pkg-config and the loader at the installed library, as an outside user's
# environment would, and sets $root, $out (BUILD_DIR/bindings) and the Go variables (offline, caches in $out).
# The prefix lies inside the destdir, so pkg-config relocates it with --define-prefix (from where the .pc
# lies): cgo, the Rust build script and the Python module run `pkg-config` from PATH, which finds the wrapper
# in $out/bin that adds the flag.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/$1/bindings"
mkdir -p "$out/bin"
installed_pc=$(find "$2" -name neuronmem.pc | head -n1)
[ -n "$installed_pc" ] || { echo "no neuronmem.pc under $2"; exit 1; }
printf '#!/bin/sh\nexec %s --define-prefix "$@"\n' "$(command -v pkg-config)" >"$out/bin/pkg-config"
chmod +x "$out/bin/pkg-config"
export PATH="$out/bin:$PATH"
export PKG_CONFIG_PATH="$(dirname "$installed_pc")"
LD_LIBRARY_PATH="$(pkg-config --variable=libdir neuronmem)"
export LD_LIBRARY_PATH
export GOPROXY=off GOCACHE="$out/go-cache" GOPATH="$out/go-path"
export PYTHONPATH="$root/bindings/python" PYTHONDONTWRITEBYTECODE=1
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
export CARGO_TARGET_DIR="$out/cargo-target" CARGO_NET_OFFLINE=true
