#include "vmm/report/testing/json_schema.h"

#include <regex>
#include <set>

namespace sigvisor::testing {
namespace {

using json = nlohmann::json;

const std::set<std::string> kKnownKeywords = {
    "$schema", "$id", "title", "description", "type", "enum", "const", "required", "properties",
    "additionalProperties", "items", "allOf", "$ref", "minimum", "maximum", "pattern", "definitions"};

bool HasType(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    return value.is_number_integer() ||
           (value.is_number_float() && value.get<double>() == static_cast<double>(static_cast<long long>(value.get<double>())));
  }
  return false;
}

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  void Check(const json& value, const json& schema, const std::string& path) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) Error(path, "no value is allowed here");
      return;
    }
    if (!schema.is_object()) {
      Error(path, "schema is not an object");
      return;
    }
    for (const auto& [keyword, ignored] : schema.items()) {
      if (!kKnownKeywords.count(keyword)) Error(path, "schema keyword '" + keyword + "' is not supported");
    }
    if (schema.contains("$ref")) {
      const std::string ref = schema["$ref"].get<std::string>();
      const std::string prefix = "#/definitions/";
      if (ref.rfind(prefix, 0) != 0 || !root_["definitions"].contains(ref.substr(prefix.size()))) {
        Error(path, "unresolvable $ref " + ref);
        return;
      }
      Check(value, root_["definitions"][ref.substr(prefix.size())], path);
    }
    if (schema.contains("allOf")) {
      for (const json& sub : schema["allOf"]) Check(value, sub, path);
    }
    if (schema.contains("type")) {
      std::vector<std::string> types;
      if (schema["type"].is_string()) types.push_back(schema["type"]);
      else for (const json& t : schema["type"]) types.push_back(t);
      bool ok = false;
      for (const std::string& t : types) ok = ok || HasType(value, t);
      if (!ok) Error(path, "is " + std::string(value.type_name()) + ", not " + schema["type"].dump());
    }
    if (schema.contains("enum")) {
      bool ok = false;
      for (const json& e : schema["enum"]) ok = ok || e == value;
      if (!ok) Error(path, value.dump() + " is not one of " + schema["enum"].dump());
    }
    if (schema.contains("const") && schema["const"] != value) Error(path, "is not " + schema["const"].dump());
    if (value.is_number()) {
      if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>()) {
        Error(path, value.dump() + " is below the minimum " + schema["minimum"].dump());
      }
      if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>()) {
        Error(path, value.dump() + " is above the maximum " + schema["maximum"].dump());
      }
    }
    if (value.is_string() && schema.contains("pattern")) {
      if (!std::regex_search(value.get<std::string>(), std::regex(schema["pattern"].get<std::string>()))) {
        Error(path, value.dump() + " does not match " + schema["pattern"].dump());
      }
    }
    if (value.is_object()) {
      if (schema.contains("required")) {
        for (const json& name : schema["required"]) {
          if (!value.contains(name.get<std::string>())) Error(path, "missing " + name.get<std::string>());
        }
      }
      const json properties = schema.value("properties", json::object());
      for (const auto& [name, member] : value.items()) {
        const std::string member_path = path + "/" + name;
        if (properties.contains(name)) {
          Check(member, properties[name], member_path);
        } else if (schema.contains("additionalProperties")) {
          const json& extra = schema["additionalProperties"];
          if (extra.is_boolean() && !extra.get<bool>()) {
            Error(member_path, "is not in the schema");
          } else if (extra.is_object()) {
            Check(member, extra, member_path);
          }
        }
      }
    }
    if (value.is_array() && schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        Check(value[i], schema["items"], path + "/" + std::to_string(i));
      }
    }
  }

  std::vector<std::string> errors;

 private:
  void Error(const std::string& path, const std::string& what) {
    if (errors.size() < 50) errors.push_back((path.empty() ? "/" : path) + ": " + what);
  }
  const json& root_;
};

}  // namespace

std::vector<std::string> ValidateJson(const nlohmann::json& document, const nlohmann::json& schema) {
  Validator validator(schema);
  validator.Check(document, schema, "");
  return validator.errors;
}

}  // namespace sigvisor::testing
