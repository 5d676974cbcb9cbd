// Fuzzes the `--inject SPEC` parser (vmm/inject/injection_spec.h): arbitrary bytes as
// a spec. A refusal must be one InvalidArgument line naming the spec; an accepted
// spec must keep the grammar's promises (docs/inject.md) and survive a round trip
// through its canonical form.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "vmm/inject/injection_spec.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

bool IsPhaseChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsSymbolChar(char c) { return IsPhaseChar(c) || c == '.' || c == '$'; }

void CheckInvariants(const sigvisor::InjectionSpec& s) {
  using sigvisor::InjectWhat;
  using sigvisor::InjectWhen;
  Check(s.count >= 1 && s.count <= 100000);

  // WHAT.
  switch (s.what) {
    case InjectWhat::kException:
      Check(s.vector < 32 && sigvisor::ExceptionInjectable(s.vector));
      Check(s.vector != 2 && s.vector != 9 && s.vector != 15 && s.vector < 20);
      Check(s.error_code.has_value() == sigvisor::ExceptionHasErrorCode(s.vector));
      Check(!s.cr2.has_value() || s.vector == 14);
      Check(sigvisor::ExceptionVectorByName(sigvisor::ExceptionName(s.vector)) == s.vector);
      break;
    case InjectWhat::kSignal:
      Check(s.signo >= 1 && s.signo <= 64);
      Check(s.task >= 0);
      break;
    case InjectWhat::kPage:
      if (s.page_target == sigvisor::PageTarget::kAddress) Check(s.page_address < 0x800000000000ull);
      if (s.page_target == sigvisor::PageTarget::kAccess) Check(s.when == InjectWhen::kAt);
      break;
  }
  if (s.what != InjectWhat::kException) {
    Check(!s.error_code.has_value() && !s.cr2.has_value() && s.mode == sigvisor::ExceptionMode::kUser);
  }
  if (s.what != InjectWhat::kSignal) Check(s.task == 0);
  if (s.what != InjectWhat::kPage) {
    Check(s.page_target == sigvisor::PageTarget::kStack && s.page_address == 0);
  }

  // WHEN.
  Check(s.hit >= 1);
  if (s.when != InjectWhen::kAt) Check(s.hit == 1 && s.symbol.empty() && s.address == 0);
  if (s.when == InjectWhen::kAt) {
    if (s.symbol.empty()) Check(s.symbol_offset == 0);
    for (char c : s.symbol) Check(IsSymbolChar(c));
    if (!s.symbol.empty()) Check(!(s.symbol[0] >= '0' && s.symbol[0] <= '9'));
    Check(s.count - 1 <= UINT64_MAX - s.hit);
  }
  Check((s.when == InjectWhen::kOp) == (s.op >= 1));
  if (s.when == InjectWhen::kOp) Check(s.count - 1 <= UINT64_MAX - s.op);
  Check((s.when == InjectWhen::kExit) == (s.exit_index >= 1));
  if (s.when == InjectWhen::kExit) Check(s.count - 1 <= UINT64_MAX - s.exit_index);
  if (!s.phase.empty()) {
    Check(s.when == InjectWhen::kOp || s.when == InjectWhen::kRandom);
    Check(s.phase.size() <= 31);
    for (char c : s.phase) Check(IsPhaseChar(c));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)sigvisor::ExceptionVectorByName(text);
  if (auto signo = sigvisor::SignalByName(text)) Check(*signo >= 1 && *signo <= 64);

  auto spec = sigvisor::ParseInjectionSpec(text);
  if (!spec.ok()) {
    Check(spec.status().code() == absl::StatusCode::kInvalidArgument);
    std::string message(spec.status().message());
    Check(message.rfind("--inject '", 0) == 0);
    Check(message.find('\n') == std::string::npos);
    return 0;
  }
  Check(spec->text == text);
  CheckInvariants(*spec);

  // The canonical form parses back to the same spec, and is a fixed point.
  std::string canonical = sigvisor::FormatInjectionSpec(*spec);
  auto again = sigvisor::ParseInjectionSpec(canonical);
  Check(again.ok());
  again->text = spec->text;
  Check(*again == *spec);
  Check(sigvisor::FormatInjectionSpec(*again) == canonical);
  return 0;
}
