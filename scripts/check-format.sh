#!/usr/bin/env bash
# Checks that every tracked C and C++ file follows .clang-format (clang-format-14, installed by
# scripts/install-deps.sh), and that no tracked source line passes 120 columns. Prints the files that differ and
# how to fix them; exits non-zero if any does. clang-format runs over batches of files on every core (one
# process per file took over 30 s on a loaded 2-core machine).
set -uo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format) || {
  echo "check-format: clang-format-14 missing (scripts/install-deps.sh installs it)"
  exit 1
}
bad=0
# Lines stay within 120 columns (the formatter cannot break string literals or comments).
long=$(git ls-files -z '*.c' '*.h' '*.cc' '*.build' '*.sh' '*.py' '*.map' ':!third_party' |
  xargs -0 awk 'length > 120 { print FILENAME ":" FNR ": " length " columns" }')
if [ -n "$long" ]; then
  echo "$long"
  bad=1
fi
# C and C++ files are as clang-format-14 writes them: its diagnostics name each file that differs.
differs=$(git ls-files -z '*.c' '*.h' '*.cc' ':!third_party' |
  xargs -0 -n 32 -P "$(nproc)" "$fmt" --style=file --dry-run --Werror 2>&1 >/dev/null |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
status=$?  # pipefail: xargs' status (123 when a file differs)
for f in $differs; do
  echo "check-format: $f differs from .clang-format: run $fmt -i $f"
  bad=1
done
[ "$status" -ne 0 ] && [ -z "$differs" ] && { echo "check-format: $fmt failed"; bad=1; }
[ "$bad" -eq 0 ] && echo "check-format: ok"
exit "$bad"
