#include "vmm/app/study/object_stats.h"

namespace sigvisor::study {
namespace {

std::vector<ObjectStats> Load() {
  std::vector<ObjectStats> all;
  auto find = [&all](std::string_view variant) -> ObjectStats& {
    for (ObjectStats& s : all) {
      if (s.variant == variant) return s;
    }
    all.push_back({});
    all.back().variant = std::string(variant);
    return all.back();
  };
#define SIGVISOR_OBJECT_SIZE(variant, file_name, text_bytes, data_bytes, bss_bytes) \
  {                                                                                 \
    ObjectStats& s = find(variant);                                                 \
    s.file = file_name;                                                             \
    s.text = text_bytes;                                                            \
    s.data = data_bytes;                                                            \
    s.bss = bss_bytes;                                                              \
  }
#define SIGVISOR_STACK_USAGE(variant, function, bytes, qualifier) \
  find(variant).stack.push_back({function, bytes, qualifier});
#define SIGVISOR_OBJECT_FUNCTION(variant, function, bytes) \
  find(variant).functions.push_back({function, bytes});
#include "arch/x86_64/guest/signal_object_stats.inc"
#undef SIGVISOR_OBJECT_SIZE
#undef SIGVISOR_STACK_USAGE
#undef SIGVISOR_OBJECT_FUNCTION
  return all;
}

}  // namespace

const StackUsage* ObjectStats::FindStack(std::string_view function) const {
  for (const StackUsage& s : stack) {
    if (s.function == function) return &s;
  }
  return nullptr;
}

const std::vector<ObjectStats>& AllSignalObjectStats() {
  static const std::vector<ObjectStats> kAll = Load();
  return kAll;
}

const ObjectStats* SignalObjectStats(std::string_view variant) {
  for (const ObjectStats& s : AllSignalObjectStats()) {
    if (s.variant == variant) return &s;
  }
  return nullptr;
}

}  // namespace sigvisor::study
