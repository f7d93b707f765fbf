#!/usr/bin/env bash
# Checks that every tracked C and C++ file follows .clang-format (clang-format-14, installed by
# scripts/install-deps.sh). Prints the files that differ and how to fix them; exits non-zero if any does.
set -uo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format) || {
  echo "check-format: clang-format-14 missing (scripts/install-deps.sh installs it)"
  exit 1
}
bad=0
while IFS= read -r f; do
  # Lines stay within 120 columns (the formatter cannot break string literals or comments), and C and C++
  # files are as clang-format-14 writes them.
  long=$(awk 'length > 120 { print FILENAME ":" FNR ": " length " columns" }' "$f")
  formatted=1
  case "$f" in
    *.c | *.h | *.cc) "$fmt" --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || formatted=0 ;;
  esac
  [ -z "$long" ] && [ "$formatted" -eq 1 ] && continue
  [ -n "$long" ] && echo "$long"
  [ "$formatted" -eq 0 ] && echo "check-format: $f differs from .clang-format: run $fmt -i $f"
  bad=1
done < <(git ls-files '*.c' '*.h' '*.cc' '*.build' '*.sh' '*.py' '*.map' ':!third_party')  # vendored: upstream form
[ "$bad" -eq 0 ] && echo "check-format: ok"
exit "$bad"
