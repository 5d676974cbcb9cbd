#include "vmm/trace/op_counts.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "vmm/trace/stages.h"

namespace sigvisor::trace {
namespace {

bool IsLegacyPrefix(uint8_t b) {
  switch (b) {
    case 0xf0:
    case 0xf2:
    case 0xf3:  // lock, repne, rep
    case 0x2e:
    case 0x36:
    case 0x3e:
    case 0x26:
    case 0x64:
    case 0x65:  // segments
    case 0x66:
    case 0x67:  // operand, address size
      return true;
    default:
      return false;
  }
}

// A store's destination and size from its AT&T text: "movq %rax, 0x10(%rbp)" stores 8
// bytes at base %rbp, offset 0x10. Only plain moves to memory (mov, movb/w/l/q); nullopt
// for anything else.
struct Store {
  std::string base;
  int64_t offset = 0;
  int size = 0;
};
std::optional<Store> StoreOf(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view mnemonic = text.substr(0, space);
  int size = 0;
  if (mnemonic == "movq")
    size = 8;
  else if (mnemonic == "movl")
    size = 4;
  else if (mnemonic == "movw")
    size = 2;
  else if (mnemonic == "movb")
    size = 1;
  else
    return std::nullopt;
  // The destination is the last operand: "disp(%base)" or "(%base)".
  const size_t comma = text.rfind(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  const std::string_view dest = text.substr(comma + 2);
  const size_t open = dest.find('(');
  if (open == std::string_view::npos || !dest.ends_with(")")) return std::nullopt;
  const std::string_view inside = dest.substr(open + 1, dest.size() - open - 2);
  if (inside.find(',') != std::string_view::npos) return std::nullopt;  // indexed: not a field
  Store store;
  store.base = std::string(inside);
  store.size = size;
  const std::string_view disp = dest.substr(0, open);
  if (!disp.empty()) {
    const bool negative = disp.starts_with("-");
    std::string digits(negative ? disp.substr(1) : disp);
    if (digits.starts_with("%")) return std::nullopt;  // a segment override: not plain memory
    char* end = nullptr;
    const long long value = std::strtoll(digits.c_str(), &end, 0);
    if (end == digits.c_str() || *end != '\0') return std::nullopt;
    store.offset = negative ? -value : value;
  }
  return store;
}

}  // namespace

bool HasGsPrefix(const Entry& e) {
  for (uint8_t b : e.bytes) {
    if (b == 0x65) return true;
    if (!IsLegacyPrefix(b)) return false;
  }
  return false;
}

bool IsUserCopyRoutine(std::string_view f) {
  for (std::string_view prefix :
       {"copy_to_user", "copy_from_user", "_copy_to_user", "_copy_from_user", "copy_user_",
        "__get_user_", "__put_user_", "clear_user", "__clear_user"}) {
    if (f.starts_with(prefix)) return true;
  }
  return false;
}

std::optional<OpCounts> CountOp(const Trace& trace, const Analysis& analysis, size_t op) {
  if (op >= analysis.ops.size()) return std::nullopt;
  const OpSlice& slice = analysis.ops[op];
  const size_t end = std::min(slice.end, trace.entries.size());
  const size_t begin = std::min(slice.begin, end);
  const std::vector<std::string> stages = ClassifyStages(trace, begin, end, nullptr);
  OpCounts c;
  c.kernel_insns = slice.kernel_insns;
  // Stores of the dequeue stage, in order, for the largest block.
  std::vector<Store> dequeue_stores;
  for (size_t i = begin; i < end; ++i) {
    const Entry& e = trace.entries[i];
    const std::string& stage = stages[i - begin];
    if (!stage.empty()) c.stage_insns[stage] = AddCounts(c.stage_insns[stage], HostCount(e));
    if (e.kind != Entry::Kind::kInsn || e.cpl != 0) continue;
    c.dr7_writes += e.debug_control_write ? 1 : 0;
    c.dr_writes += e.debug_register_write ? 1 : 0;
    c.gs_prefixed += HasGsPrefix(e) ? 1 : 0;
    c.swapgs += e.text == "swapgs" ? 1 : 0;
    c.user_access_windows += e.text == "stac" ? 1 : 0;
    const bool frame = stage == stage::kFrameSetup || stage == stage::kFpuFrame;
    const std::string function = e.function.empty() ? e.symbol : e.function;
    if (frame) c.frame_setup_functions.insert(function);
    // A call's target is the next instruction: a user-copy routine entered from code
    // that is not one itself.
    if (frame && i > begin && trace.entries[i - 1].text.starts_with("call") &&
        IsUserCopyRoutine(function) &&
        std::none_of(e.callers.begin(), e.callers.end(),
                     [](const std::string& f) { return IsUserCopyRoutine(f); })) {
      ++c.user_copy_calls_in_frame_setup;
    }
    if (stage == stage::kDequeue) {
      if (std::optional<Store> store = StoreOf(e.text); store && store->base != "%rsp") {
        c.dequeue_bytes_stored += store->size;
        dequeue_stores.push_back(*store);
      }
    }
  }
  // Runs of stores that fill one base register's memory at rising, adjacent offsets.
  uint64_t run = 0;
  for (size_t k = 0; k < dequeue_stores.size(); ++k) {
    const Store& s = dequeue_stores[k];
    const bool continues = k > 0 && dequeue_stores[k - 1].base == s.base &&
                           dequeue_stores[k - 1].offset + dequeue_stores[k - 1].size == s.offset;
    run = continues ? run + s.size : s.size;
    c.dequeue_largest_block = std::max(c.dequeue_largest_block, run);
  }
  return c;
}

}  // namespace sigvisor::trace
