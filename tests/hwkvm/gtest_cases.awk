# Reads one test's log (GoogleTest's output, or a shell test's) and prints its cases:
#   cases: N run, N passed, N skipped, N failed
#   skipped SUITE.NAME: REASON
# Both lanes use it: tests/hwkvm/init inside the hardware lane, tests/lane_summary.sh
# over bazel-testlogs on the host. A shell test is one case; it skips by printing a
# line "SKIP: REASON" (and exiting 0). `awk -v rc=STATUS -f gtest_cases.awk LOG`.
/^\[ RUN      \] / { gtest = 1; current = $4; next }
/: Skipped$/ { want_reason = 1; next }
want_reason && NF > 0 { reason[current] = $0; want_reason = 0; next }
/^\[       OK \] .* ms\)$/ { passed++; next }
/^\[  SKIPPED \] .* ms\)$/ { skipped++; order[skipped] = $4; next }
/^\[  FAILED  \] .* ms\)$/ { failed++; next }
/^SKIP: / { shell_skip = substr($0, 7) }
END {
  if (!gtest) {
    if (shell_skip != "") { skipped = 1; order[1] = "(script)"; reason["(script)"] = shell_skip }
    else if (rc == 0) passed = 1
    else failed = 1
  }
  printf "  cases: %d run, %d passed, %d skipped, %d failed\n", \
    passed + skipped + failed, passed, skipped, failed
  for (i = 1; i <= skipped; i++) printf "  skipped %s: %s\n", order[i], reason[order[i]]
}
