// `sigvisor merge FILE...`: combines the --json results of `sigvisor bench --shard
// i/n` runs of one matrix into one result.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/bench/results.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/command.h"
#include "vmm/base/capped_file.h"

namespace sigvisor::cli {

// `sigvisor help`'s line for `merge`, and what `sigvisor help merge` prints above
// the flags (MergeFlags, options.cc).
constexpr CommandHelp kMergeHelp{
    "combine `sigvisor bench --shard i/n --json` results into one",
    "Reads the JSON results of bench runs of one matrix cut into shards (any order) and\n"
    "prints the combined result as text, --json or --csv, as `sigvisor bench` would\n"
    "have printed it in one run. Refuses results of different matrices, kernel builds\n"
    "or hosts and a shard given twice; missing shards leave the result INCOMPLETE\n"
    "(exit status 1).\n"
    "\nExample:\n"
    "  sigvisor merge part1.json part2.json part3.json part4.json --json > bench.json",
};

int MergeCommand(const MergeOptions& options) {
  const std::vector<std::string>& args = options.args;
  if (args.empty()) {
    return ReportError("`sigvisor merge` needs the JSON files of `sigvisor bench --shard i/n --json`");
  }
  absl::StatusOr<BenchOutput> output = OpenOutput(options.output);
  if (!output.ok()) return ReportError(output.status());
  std::vector<bench::BenchResult> parts;
  std::vector<std::string> names;
  for (const std::string& path : args) {
    names.emplace_back(path);
    absl::StatusOr<std::string> text = ReadCappedFile(path, file_caps::kBenchResultJson);
    if (!text.ok()) return ReportError(text.status());
    nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      return ReportError(absl::StrFormat("'%s' is not JSON (give `sigvisor bench --json` output)", path));
    }
    absl::StatusOr<bench::BenchResult> part = bench::BenchFromJson(doc);
    if (!part.ok()) {
      return ReportError(absl::StrFormat("'%s' is not a bench result: %s", path, part.status().message()));
    }
    parts.push_back(*std::move(part));
  }
  absl::StatusOr<bench::BenchResult> merged = bench::MergeResults(parts, names);
  if (!merged.ok()) return ReportError(absl::StrFormat("cannot merge: %s", merged.status().message()));
  return PrintBench(*merged, *output);
}

}  // namespace sigvisor::cli
