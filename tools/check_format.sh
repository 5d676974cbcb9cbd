#!/usr/bin/env bash
# Are the C and C++ files' #include blocks as .clang-format groups and orders them?
# Only the #include lines are formatted (clang-format --lines), so nothing else in a
# file is checked or changed. Prints one line per file whose includes differ and
# exits 1 if any does; --fix rewrites those lines in place instead.
#
# Usage: tools/check_format.sh [--fix] [FILE...]
#   FILE  the files to check (default: every .cc, .h and .c file of the work tree that
#         git tracks or does not ignore)
# CLANG_FORMAT names the binary (default clang-format-14, which tools/setup.sh
# installs: another version may group or sort differently).
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
if [[ ${1:-} == --fix ]]; then fix=1; shift; fi
export CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14} FIX=$fix
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check_format: $CLANG_FORMAT is not installed (tools/setup.sh installs it)" >&2
  exit 2
fi

files=("$@")
if ((${#files[@]} == 0)); then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' '*.c')
fi

# check_one FILE: prints "same FILE" or "differ FILE" (and with --fix reorders it), or
# "failed FILE" when clang-format fails; nothing for a file without includes.
check_one() {
  local file=$1 formatted ranges
  [[ -f $file ]] || return 0  # deleted in the work tree
  # Every #include line, as a --lines range: clang-format sorts the blocks they are in
  # and touches no other line. An X-macro table ("x.inc") is left where it is: its
  # order is the table's (vmm/app/images/embedded_images.cc).
  mapfile -t ranges < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$file" |
                        grep -v '\.inc[">]' | awk -F: '{print "--lines=" $1 ":" $1}')
  ((${#ranges[@]} > 0)) || return 0
  formatted=$(mktemp)
  if ! "$CLANG_FORMAT" --style=file "${ranges[@]}" "$file" >"$formatted"; then
    echo "failed $file"
  elif cmp -s "$formatted" "$file"; then
    echo "same $file"
  else
    ((FIX)) && cat "$formatted" >"$file"
    echo "differ $file"
  fi
  rm -f "$formatted"
}
export -f check_one

# One clang-format per file (--lines is per file), on every core.
results=$(printf '%s\0' "${files[@]}" |
          xargs -0 -r -n 16 -P "$(nproc)" bash -c 'for f; do check_one "$f"; done' _ | sort -k2)
checked=$(grep -c '^\(same\|differ\) ' <<<"$results" || true)
differ=$(grep -c '^differ ' <<<"$results" || true)
if grep '^failed ' <<<"$results" | sed "s/^failed \(.*\)/check_format: \1: $CLANG_FORMAT failed/" >&2; then
  exit 2
fi

if ((fix)); then
  sed -n 's/^differ \(.*\)/check_format: \1: includes reordered/p' <<<"$results"
  echo "check_format: $differ of $checked files with includes reordered"
  exit 0
fi
sed -n 's/^differ \(.*\)/check_format: \1: includes not grouped and sorted as .clang-format says/p' \
  <<<"$results"
if ((differ > 0)); then
  echo "check_format: $differ of $checked files differ; tools/check_format.sh --fix FILE... reorders them"
  exit 1
fi
echo "check_format: the includes of all $checked files are in order"
