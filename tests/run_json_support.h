// `sigvisor run --json` from a test: the document, checked against its schema, and its
// phases by name.
#ifndef SIGVISOR_TESTS_RUN_JSON_SUPPORT_H_
#define SIGVISOR_TESTS_RUN_JSON_SUPPORT_H_

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "vmm/report/testing/json_schema.h"

namespace sigvisor::testing {

// `sigvisor run --json --quiet ARGS`: its document, which must exit 0 and be valid
// against docs/schema/sigvisor.run-2.schema.json (a failure otherwise; {} when it is
// no JSON at all).
inline nlohmann::json RunJson(const std::string& args) {
  const CommandResult r = Sigvisor("run --json --quiet " + args);
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err << r.out;
  nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  if (doc.is_discarded()) return nlohmann::json::object();
  for (const std::string& error : ValidateJson(doc, DocsSchema("sigvisor.run-2.schema.json"))) {
    ADD_FAILURE() << error;
  }
  return doc;
}

// The run's first phase named `name`, or null (a failure) when it has none.
inline const nlohmann::json* PhaseNamed(const nlohmann::json& run, const std::string& name) {
  if (run.contains("phases")) {
    for (const nlohmann::json& phase : run["phases"]) {
      if (phase["name"] == name) return &phase;
    }
  }
  ADD_FAILURE() << "no phase " << name << " in " << run.dump();
  return nullptr;
}

}  // namespace sigvisor::testing

#endif  // SIGVISOR_TESTS_RUN_JSON_SUPPORT_H_
