# Sourced by scripts/test-bindings.sh and scripts/bench-bindings.sh with $1 = BUILD_DIR, $2 = DESTDIR (a
# `meson install --destdir`): points pkg-config and the loader at the installed library, as an outside user's
# environment would, and sets $root, $out (BUILD_DIR/bindings) and the Go variables (offline, caches in $out).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/$1/bindings"
mkdir -p "$out/pkgconfig"
installed_pc=$(find "$2" -name neuronmem.pc | head -n1)
[ -n "$installed_pc" ] || { echo "no neuronmem.pc under $2"; exit 1; }
installed_prefix=$(PKG_CONFIG_PATH="$(dirname "$installed_pc")" pkg-config --variable=prefix neuronmem)
sed "s|^prefix=.*|prefix=$2$installed_prefix|" "$installed_pc" >"$out/pkgconfig/neuronmem.pc"
export PKG_CONFIG_PATH="$out/pkgconfig"
LD_LIBRARY_PATH="$(pkg-config --variable=libdir neuronmem)"
export LD_LIBRARY_PATH
export GOPROXY=off GOCACHE="$out/go-cache" GOPATH="$out/go-path"
export PYTHONPATH="$root/bindings/python" PYTHONDONTWRITEBYTECODE=1
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
export CARGO_TARGET_DIR="$out/cargo-target" CARGO_NET_OFFLINE=true
