// Which functions the compiler inlined at a code address, from the image's DWARF
// (DW_TAG_inlined_subroutine and its ranges): the bundled kernel is built with -g1,
// and its signal path is mostly inlined (handle_signal, setup_rt_frame and
// setup_sigcontext all live inside exit_to_user_mode), so a profile by ELF symbol
// alone would hide the stages of delivery.
//
// A small reader for what GCC emits (DWARF 4 and 5: .debug_info, .debug_abbrev,
// .debug_str, .debug_line_str, .debug_rnglists or .debug_ranges). The image is
// untrusted: every read is bounds-checked, and anything it does not understand ends
// the reading with what it has (an image without DWARF simply has no inline data).
#ifndef SIGVISOR_VMM_TRACE_INLINE_INFO_H_
#define SIGVISOR_VMM_TRACE_INLINE_INFO_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sigvisor::trace {

class InlineInfo {
 public:
  InlineInfo() = default;

  // Reads the DWARF of an ELF64 little-endian file.
  static InlineInfo FromElf(std::span<const uint8_t> elf);

  // The functions inlined at `address`, outermost first (the out-of-line function
  // that contains them is not included: that is the ELF symbol).
  std::vector<std::string> InlinedAt(uint64_t address) const;

  size_t size() const { return ranges_.size(); }
  bool empty() const { return ranges_.empty(); }

  // One inlined instance's address range, for tests.
  struct Range {
    uint64_t begin = 0;
    uint64_t end = 0;
    int depth = 0;  // DIE nesting depth: deeper ranges are inlined into shallower ones
    std::string name;
  };
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;  // sorted by begin
};

}  // namespace sigvisor::trace

#endif  // SIGVISOR_VMM_TRACE_INLINE_INFO_H_
