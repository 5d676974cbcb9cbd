#include "vmm/app/cli/flag_table.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace sigvisor::cli {
namespace {

// This Abseil's string_view is its own type, not std::string_view.
absl::string_view A(std::string_view text) { return absl::string_view(text.data(), text.size()); }

template <typename T>
Flag NumberFlag(std::string_view name, T* value, std::string_view help) {
  return {std::string(name), std::string(help), absl::StrCat(*value), true,
          [value](std::string_view text) {
            if (!absl::SimpleAtoi(A(text), value)) {
              return absl::InvalidArgumentError(
                  std::is_signed_v<T> ? "not a whole number" : "not a whole number >= 0");
            }
            return absl::OkStatus();
          }};
}

const Flag* FindFlag(const FlagTable& table, std::string_view name) {
  auto it = std::find_if(table.begin(), table.end(), [&](const Flag& f) { return f.name == name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

std::string Spelled(std::string_view name) {
  return absl::StrCat(name.size() == 1 ? "-" : "--", A(name));
}

Flag StringFlag(std::string_view name, std::string* value, std::string_view help) {
  return {std::string(name), std::string(help), *value, true, [value](std::string_view text) {
            *value = std::string(text);
            return absl::OkStatus();
          }};
}

Flag BoolFlag(std::string_view name, bool* value, std::string_view help) {
  return {std::string(name), std::string(help), *value ? "true" : "false", false,
          [value](std::string_view text) {
            if (!absl::SimpleAtob(A(text), value)) {
              return absl::InvalidArgumentError("give true or false");
            }
            return absl::OkStatus();
          }};
}

Flag Int32Flag(std::string_view name, int32_t* value, std::string_view help) {
  return NumberFlag(name, value, help);
}
Flag Uint32Flag(std::string_view name, uint32_t* value, std::string_view help) {
  return NumberFlag(name, value, help);
}
Flag Uint64Flag(std::string_view name, uint64_t* value, std::string_view help) {
  return NumberFlag(name, value, help);
}

Flag DurationFlag(std::string_view name, absl::Duration* value, std::string_view help) {
  return {std::string(name), std::string(help), absl::FormatDuration(*value), true,
          [value](std::string_view text) {
            absl::StatusOr<absl::Duration> parsed = ParseDuration(text);
            if (!parsed.ok()) return parsed.status();
            *value = *parsed;
            return absl::OkStatus();
          }};
}

Flag ListFlag(std::string_view name, std::vector<std::string>* value, std::string_view help) {
  return {std::string(name), std::string(help), absl::StrJoin(*value, ","), true,
          [value](std::string_view text) {
            value->emplace_back(text);
            return absl::OkStatus();
          }};
}

absl::StatusOr<absl::Duration> ParseDuration(std::string_view text) {
  absl::Duration duration;
  double seconds;
  // A bare number is seconds, as timeout(1) reads one.
  if (!text.empty() && absl::ascii_isdigit(static_cast<unsigned char>(text.back())) &&
      absl::SimpleAtod(A(text), &seconds) && std::isfinite(seconds)) {
    return absl::Seconds(seconds);
  }
  if (absl::ParseDuration(A(text), &duration)) return duration;
  return absl::InvalidArgumentError("not a duration (give e.g. 20 for seconds, 500ms, 10s, 2m)");
}

absl::Status ParseFlags(const FlagTable& table, std::span<char* const> argv, CommandLine& line) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      line.args.insert(line.args.end(), argv.begin() + static_cast<ptrdiff_t>(i) + 1, argv.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      line.args.emplace_back(arg);
      continue;
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    const size_t equals = arg.find('=');
    std::string name(arg.substr(0, equals));
    std::replace(name.begin(), name.end(), '-', '_');
    const Flag* flag = FindFlag(table, name);
    bool negated = false;
    if (flag == nullptr && equals == std::string_view::npos && name.starts_with("no")) {
      flag = FindFlag(table, std::string_view(name).substr(2));
      negated = flag != nullptr && !flag->takes_value;
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr) return absl::NotFoundError(name);
    std::string value;
    if (negated) {
      value = "false";
    } else if (equals != std::string_view::npos) {
      value = std::string(arg.substr(equals + 1));
    } else if (!flag->takes_value) {
      value = "true";
    } else if (i + 1 < argv.size()) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(Spelled(flag->name) + " needs a value");
    }
    if (absl::Status s = flag->set(value); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s '%s': %s", Spelled(flag->name), value, s.message()));
    }
    line.given.insert(flag->name);
  }
  return absl::OkStatus();
}

std::string FlagHelp(const FlagTable& table) {
  std::string out;
  for (const Flag& flag : table) {
    absl::StrAppendFormat(&out, "  %-13s %s (default: %s)\n", Spelled(flag.name), flag.help,
                          flag.default_text.empty() ? "\"\"" : flag.default_text);
  }
  return out;
}

std::string FirstGiven(const CommandLine& line, std::span<const std::string_view> names) {
  for (std::string_view name : names) {
    if (line.Given(name)) return Spelled(name);
  }
  return "";
}

}  // namespace sigvisor::cli
