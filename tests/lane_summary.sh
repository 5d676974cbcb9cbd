#!/usr/bin/env bash
# Case counts and skip reasons of the KVM tests (tagged "kvm") from the last
# `bazel test`, in the format the hardware lane prints for each of them
# (tests/hwkvm/gtest_cases.awk), and the totals: the PVM lane's half of the picture.
set -euo pipefail
cd "$(dirname "$0")/.."
testlogs=$(bazel info bazel-testlogs 2>/dev/null)
run=0 skipped=0
while read -r target; do
  package=${target#//}; package=${package%%:*}; name=${target##*:}
  log=$testlogs/$package/$name/test.log
  [[ -f $log ]] || { echo "$target: no test log (not run)"; continue; }
  echo "$target"
  summary=$(awk -v rc=0 -f tests/hwkvm/gtest_cases.awk "$log")
  echo "$summary"
  read -r r s < <(awk '/^  cases: / {print $2, $6}' <<<"$summary")
  run=$((run + r)) skipped=$((skipped + s))
done < <(bazel query --noshow_progress 'attr(tags, "\bkvm\b", tests(//...))' 2>/dev/null | sort)
echo "pvm lane: $run test cases run, $skipped skipped"
