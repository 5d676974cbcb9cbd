// What the sigvisor binary is: its version and the commit it was built from, for
// `sigvisor --version` and the "sigvisor" member of every JSON document it writes.
#ifndef SIGVISOR_VMM_APP_CLI_BUILD_INFO_BUILD_INFO_H_
#define SIGVISOR_VMM_APP_CLI_BUILD_INFO_BUILD_INFO_H_

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sigvisor::cli {

// Raised whenever a command's output contract changes (a schema version, an exit
// status, a flag); the commit says exactly which sources were built.
inline constexpr char kSigvisorVersion[] = "0.2.0";

struct BuildInfo {
  std::string version;
  std::string commit;                 // 40 hex digits, or "unknown"
  std::optional<bool> tree_modified;  // uncommitted changes at build time; unknown: nullopt
  // The source tree it was built from (absolute), "" when unknown. Not in the JSON:
  // it says where the build ran, not what was built.
  std::string source_dir;
};

const BuildInfo& ThisBuild();

// "sigvisor 0.2.0 (commit 02519f8..., with uncommitted changes)".
std::string VersionLine();

// {"version": ..., "commit": ..., "tree_modified": ...}: the "sigvisor" member.
nlohmann::ordered_json BuildInfoJson();

// `document` with the "sigvisor" member inserted right after its "schema" key (or
// first, when it has none): every JSON document the CLI prints goes through this.
nlohmann::ordered_json WithBuildInfo(nlohmann::ordered_json document);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_BUILD_INFO_BUILD_INFO_H_
