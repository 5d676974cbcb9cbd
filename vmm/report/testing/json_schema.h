// Validates a JSON document against a JSON Schema (draft-07), the subset sigvisor's
// schemas use: type (one or a list), enum, const, required, properties,
// additionalProperties (true/false or a schema), items (one schema), allOf, $ref to
// "#/definitions/NAME", minimum, maximum and pattern (ECMAScript regex). A keyword
// outside this subset is reported as an error, so a schema cannot silently claim
// more than is checked.
#ifndef SIGVISOR_VMM_REPORT_TESTING_JSON_SCHEMA_H_
#define SIGVISOR_VMM_REPORT_TESTING_JSON_SCHEMA_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sigvisor::testing {

// Every violation, as "<json pointer>: <what>"; empty when the document is valid.
std::vector<std::string> ValidateJson(const nlohmann::json& document, const nlohmann::json& schema);

}  // namespace sigvisor::testing

#endif  // SIGVISOR_VMM_REPORT_TESTING_JSON_SCHEMA_H_
