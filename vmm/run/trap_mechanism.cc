#include "vmm/run/trap_mechanism.h"

namespace sigvisor {
namespace {

struct NamedMechanism {
  TrapMechanism mechanism;
  std::string_view name;
};

// The one table both directions read, so a name cannot parse to a mechanism that
// prints as another.
constexpr NamedMechanism kNames[] = {
    {TrapMechanism::kOff, "off"},
    {TrapMechanism::kPatch, "patch"},
    {TrapMechanism::kHwGd, "hw-gd"},
    {TrapMechanism::kPv, "pv"},
};

}  // namespace

std::string_view TrapMechanismName(TrapMechanism mechanism) {
  for (const NamedMechanism& named : kNames) {
    if (named.mechanism == mechanism) return named.name;
  }
  return "?";
}

std::optional<TrapMechanism> ParseTrapMechanism(std::string_view name) {
  for (const NamedMechanism& named : kNames) {
    if (named.name == name) return named.mechanism;
  }
  return std::nullopt;
}

}  // namespace sigvisor
