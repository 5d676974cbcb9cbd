// `sigvisor merge FILE...`: combines the --json results of `sigvisor bench --shard
// i/n` runs of one matrix into one result.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/bench/results.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/command.h"

namespace sigvisor::cli {

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
    std::ifstream file(path);
    if (!file) return ReportError(absl::StrFormat("cannot open '%s': %s", path, strerror(errno)));
    std::stringstream text;
    text << file.rdbuf();
    nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
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
