// Flags that may be given more than once (`--module A --module B`): Abseil keeps only
// the last value, so the values are collected from argv after parsing, one element per
// occurrence (commas inside a value are kept).
#ifndef SIGVISOR_VMM_CLI_REPEATED_FLAG_H_
#define SIGVISOR_VMM_CLI_REPEATED_FLAG_H_

#include <string>
#include <string_view>
#include <vector>

namespace sigvisor::cli {

// The values of every `--NAME VALUE` / `--NAME=VALUE` before "--", in order.
std::vector<std::string> RepeatedFlagValues(int argc, char** argv, std::string_view name);

// Sets --module and --inject to every occurrence's value (called by main after
// parsing).
void CollectRepeatedFlags(int argc, char** argv);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_CLI_REPEATED_FLAG_H_
