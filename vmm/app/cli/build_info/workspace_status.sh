#!/bin/sh
# Bazel's workspace status command (.bazelrc: --workspace_status_command), run in the
# workspace root: the commit the build's sources are at, for `sigvisor --version` and
# the "sigvisor" member of every JSON document, and where the sources are. Only //vmm/app/cli/build_info reads it, so a new commit rebuilds
# one small file and relinks the CLI, nothing else. Always succeeds (a failing status
# command fails the build): outside a git checkout, or without git, the commit is
# "unknown".
commit=unknown
modified=unknown
if command -v git >/dev/null 2>&1 && head=$(git rev-parse --verify --quiet HEAD 2>/dev/null); then
  commit=$head
  # Uncommitted changes to tracked files: the binary is not exactly that commit.
  if [ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    modified=false
  else
    modified=true
  fi
fi
echo "STABLE_SIGVISOR_COMMIT $commit"
# Where the sources were built from, for the gdb stub's banner (gdb's `directory`):
# the guest kernel's DWARF names its files relative to it.
echo "STABLE_SIGVISOR_SOURCE_DIR $(pwd)"
echo "STABLE_SIGVISOR_TREE_MODIFIED $modified"
exit 0
