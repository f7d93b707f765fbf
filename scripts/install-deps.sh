#!/usr/bin/env bash
# Installs the Debian packages libneuronmem needs to build, test and benchmark, if any is missing.
# Idempotent; needs root (or sudo). Only Debian's package registry is used.
set -euo pipefail
packages=(
  meson ninja-build pkg-config g++ clang libclang-rt-14-dev python3 binutils
  libmimalloc-dev liburing-dev libtbb-dev nlohmann-json3-dev
  libgtest-dev libbenchmark-dev clang-format-14
  libeigen3-dev libblis4-serial libopenblas0-serial
  libfabric-dev libfabric1
  golang-go python3-numpy python3-pip python3-setuptools python3-wheel python3-venv
  gnuplot-nox
)
# The Rust binding needs cargo; rustup's (/root/.cargo/bin) serves when present, else Debian's.
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  packages+=(cargo rustc)
fi
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
