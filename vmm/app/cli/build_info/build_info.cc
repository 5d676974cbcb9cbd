#include "vmm/app/cli/build_info/build_info.h"

#include <string_view>

namespace sigvisor::cli {

// Defined in the generated build_info_stamp.cc (build_info.bzl).
extern const char kBuildCommit[];
extern const char kBuildTreeModified[];
extern const char kBuildSourceDir[];

const BuildInfo& ThisBuild() {
  static const BuildInfo build = [] {
    BuildInfo info{kSigvisorVersion, kBuildCommit, std::nullopt, kBuildSourceDir};
    const std::string_view modified = kBuildTreeModified;
    if (modified == "true") info.tree_modified = true;
    if (modified == "false") info.tree_modified = false;
    return info;
  }();
  return build;
}

std::string VersionLine() {
  const BuildInfo& build = ThisBuild();
  std::string line = "sigvisor " + build.version + " (commit " + build.commit;
  if (build.tree_modified == true) line += ", with uncommitted changes";
  return line + ")";
}

nlohmann::ordered_json BuildInfoJson() {
  const BuildInfo& build = ThisBuild();
  return {{"version", build.version},
          {"commit", build.commit},
          {"tree_modified", build.tree_modified ? nlohmann::ordered_json(*build.tree_modified)
                                                : nlohmann::ordered_json(nullptr)}};
}

nlohmann::ordered_json WithBuildInfo(nlohmann::ordered_json document) {
  if (!document.is_object()) return document;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!document.contains("schema")) out["sigvisor"] = BuildInfoJson();
  for (auto& [key, value] : document.items()) {
    if (key == "sigvisor") continue;  // a document read back (merge) gets this build's
    out[key] = std::move(value);
    if (key == "schema") out["sigvisor"] = BuildInfoJson();
  }
  return out;
}

}  // namespace sigvisor::cli
