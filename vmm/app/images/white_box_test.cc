// Every embedded x86-64 kernel keeps the white-box contract (guest-kit/abi/white_box.h):
// each function the host finds by name is in the image, as an ELF symbol or, where
// the host only needs to see it in a trace, as an inlined subroutine in its DWARF.
// A rename in the guest fails here rather than as an injector that never fires or a
// trace profile without its stages.
#include "guest-kit/abi/white_box.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "vmm/app/images/embedded_images.h"
#include "vmm/trace/inline_info.h"

namespace sigvisor {
namespace {

TEST(WhiteBoxTest, EveryX86KernelDefinesEveryContractFunction) {
  ASSERT_FALSE(KernelVariants(GuestArch::kX86_64).empty());
  for (const KernelVariant& variant : KernelVariants(GuestArch::kX86_64)) {
    SCOPED_TRACE(std::string(variant.name));
    absl::StatusOr<ElfImage> elf = ParseKernel(variant);
    ASSERT_TRUE(elf.ok()) << elf.status();
    std::set<std::string> inlined;
    // Held in a local: a range-for over a temporary's member would outlive it.
    const trace::InlineInfo inline_info = trace::InlineInfo::FromElf(variant.bytes);
    for (const trace::InlineInfo::Range& r : inline_info.ranges()) {
      inlined.insert(r.name);
    }
    for (const white_box::ContractFunction& f : white_box::kFunctions) {
      const bool symbol = elf->symbols().Find(f.name).has_value();
      if (f.out_of_line) {
        EXPECT_TRUE(symbol) << f.name << " is not an ELF symbol";
      } else {
        EXPECT_TRUE(symbol || inlined.contains(std::string(f.name)))
            << f.name << " is neither an ELF symbol nor inlined anywhere";
      }
    }
    EXPECT_TRUE(elf->symbols().Find(white_box::kExTableStart).has_value());
    EXPECT_TRUE(elf->symbols().Find(white_box::kExTableStop).has_value());
    // pv_set_debugreg exactly in the debugreg=pv builds: --trap=pv goes by it.
    EXPECT_EQ(elf->symbols().Find(white_box::kPvSetDebugreg).has_value(),
              variant.name.find("debugreg=pv") != std::string_view::npos);
  }
}

}  // namespace
}  // namespace sigvisor
