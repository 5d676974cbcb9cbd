#!/usr/bin/env bash
# workspace_status.sh: the commit of a git checkout, whether it has uncommitted changes,
# the directory, and "unknown" outside a checkout or without git, always with status 0
# (a failing status command would fail every build: a fresh clone, an exported tree).
set -euo pipefail

script=$(realpath "$1")
tmp=${TEST_TMPDIR:-$(mktemp -d)}
failures=0
expect() { # description, output, wanted line
  if ! grep -qxF "$3" <<<"$2"; then
    echo "FAIL $1: no line '$3' in:"
    echo "$2"
    failures=$((failures + 1))
  else
    echo "PASS $1: $3"
  fi
}

# Outside a git checkout.
mkdir -p "$tmp/plain"
out=$(cd "$tmp/plain" && "$script")
expect "outside a checkout" "$out" "STABLE_SIGVISOR_COMMIT unknown"
expect "outside a checkout" "$out" "STABLE_SIGVISOR_TREE_MODIFIED unknown"
expect "outside a checkout" "$out" "STABLE_SIGVISOR_SOURCE_DIR $tmp/plain"

# Without git on PATH, in a checkout.
if command -v git >/dev/null; then
  mkdir -p "$tmp/repo"
  cd "$tmp/repo"
  git init -q .
  echo one > file
  git add file
  git -c user.name=t -c user.email=t@example.invalid commit -q -m one
  head=$(git rev-parse HEAD)
  out=$("$script")
  expect "a clean checkout" "$out" "STABLE_SIGVISOR_COMMIT $head"
  expect "a clean checkout" "$out" "STABLE_SIGVISOR_TREE_MODIFIED false"
  echo two > file
  out=$("$script")
  expect "a modified checkout" "$out" "STABLE_SIGVISOR_TREE_MODIFIED true"
  echo untracked > other
  git checkout -q file
  out=$("$script")
  expect "untracked files only" "$out" "STABLE_SIGVISOR_TREE_MODIFIED false"
  out=$(PATH=/nonexistent "$(command -v bash)" "$script")
  expect "no git on PATH" "$out" "STABLE_SIGVISOR_COMMIT unknown"
else
  echo "NOTE: git is not installed: the checkout cases are not run"
fi

exit $((failures > 0))
