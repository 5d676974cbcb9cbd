#include "arch/x86_64/vmm/machine/linux_boot.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kKernelAt = 16 * kMiB;  // where Debian's kernel loads

// Reads guest memory back by the boot protocol's offsets (not the writer's structs).
class LinuxBootTest : public ::testing::Test {
 protected:
  void MakeMemory(uint64_t size) {
    absl::StatusOr<GuestMemory> memory = GuestMemory::Create(size);
    ASSERT_TRUE(memory.ok()) << memory.status();
    memory_.emplace(std::move(*memory));
  }
  void SetUp() override { MakeMemory(64 * kMiB); }

  template <typename T>
  T At(uint64_t gpa) {
    absl::StatusOr<T> v = memory_->ReadObject<T>(gpa);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : T{};
  }
  template <typename T>
  T Zp(uint64_t offset) {
    return At<T>(kLinuxBootParamsGpa + offset);
  }
  std::string String(uint64_t gpa, size_t max) {
    std::vector<uint8_t> bytes(max);
    EXPECT_TRUE(memory_->Read(gpa, bytes).ok());
    return std::string(reinterpret_cast<const char*>(bytes.data()),
                       strnlen(reinterpret_cast<const char*>(bytes.data()), max));
  }

  LinuxBootParams Params() {
    LinuxBootParams p;
    p.cmdline = "console=ttyS0 nokaslr";
    p.kernel_load_begin = kKernelAt;
    p.kernel_init_size = 20 * kMiB;
    return p;
  }

  // A bzImage's setup header, bytes 0x1f1..0x26b, protocol 2.15.
  static std::vector<uint8_t> BzImageHeader(uint32_t cmdline_size, uint32_t initrd_addr_max) {
    std::vector<uint8_t> page(0x26c, 0);
    auto put = [&page](size_t at, auto v) { std::memcpy(page.data() + at, &v, sizeof(v)); };
    put(0x1f1, uint8_t{27});             // setup_sects
    put(0x1fe, uint16_t{0xaa55});
    put(0x200, uint16_t{0x66eb});        // jump; the byte at 0x201 gives the header's end
    put(0x202, uint32_t{0x53726448});    // "HdrS"
    put(0x206, uint16_t{0x020f});
    put(0x20e, uint16_t{0x3ae0});        // kernel_version: kept as it is
    put(0x211, uint8_t{0x01 | 0x02 | 0x40 | 0x80});  // LOADED_HIGH, KASLR, KEEP_SEG, HEAP
    put(0x224, uint16_t{0xfe00});
    put(0x22c, initrd_addr_max);
    put(0x230, uint32_t{0x200000});      // kernel_alignment: kept
    put(0x236, uint16_t{0x7f});          // xloadflags: kept
    put(0x238, cmdline_size);
    put(0x250, uint64_t{0x1234});        // setup_data: cleared
    put(0x260, uint32_t{0x2e4c000});     // init_size: kept
    return {page.begin() + 0x1f1, page.end()};
  }

  std::optional<GuestMemory> memory_;
};

TEST_F(LinuxBootTest, VmlinuxGetsAMinimalHeaderCmdlineAndE820) {
  absl::StatusOr<LinuxBootPlacement> placement = WriteLinuxBootParams(*memory_, Params());
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->initrd_gpa, 0u);
  EXPECT_EQ(placement->mp_table_gpa, 0xf0000u);

  EXPECT_EQ(Zp<uint16_t>(0x1fe), 0xaa55);
  EXPECT_EQ(Zp<uint32_t>(0x202), 0x53726448u);
  EXPECT_EQ(Zp<uint16_t>(0x206), 0x020f);
  EXPECT_EQ(Zp<uint8_t>(0x210), 0xff);  // type_of_loader
  EXPECT_EQ(Zp<uint8_t>(0x211), 0x01);  // LOADED_HIGH
  EXPECT_EQ(Zp<uint16_t>(0x224), 0);    // heap_end_ptr
  EXPECT_EQ(Zp<uint32_t>(0x228), 0x20000u);
  EXPECT_EQ(Zp<uint32_t>(0x0c8), 0u);
  EXPECT_EQ(Zp<uint32_t>(0x218), 0u);  // no ramdisk
  EXPECT_EQ(Zp<uint32_t>(0x21c), 0u);
  EXPECT_EQ(Zp<uint32_t>(0x238), 2047u);
  EXPECT_EQ(Zp<uint32_t>(0x22c), 0x7fffffffu);
  EXPECT_EQ(Zp<uint8_t>(0x1ef), 0);  // sentinel: Linux keeps the fields we wrote
  EXPECT_EQ(String(0x20000, 4096), "console=ttyS0 nokaslr");

  ASSERT_EQ(Zp<uint8_t>(0x1e8), 4);
  struct Expected {
    uint64_t addr, size;
    uint32_t type;
  };
  const Expected e820[] = {{0, 0x9fc00, 1},
                           {0x9fc00, 0x400, 2},
                           {0xf0000, 0x10000, 2},
                           {0x100000, 63 * kMiB, 1}};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(Zp<uint64_t>(0x2d0 + 20 * i), e820[i].addr);
    EXPECT_EQ(Zp<uint64_t>(0x2d0 + 20 * i + 8), e820[i].size);
    EXPECT_EQ(Zp<uint32_t>(0x2d0 + 20 * i + 16), e820[i].type);
  }
  EXPECT_EQ(Zp<uint64_t>(0x2d0 + 20 * 4), 0u);
  // The MP table the map reserves.
  EXPECT_EQ(String(0xf0000, 4), "_MP_");
}

TEST_F(LinuxBootTest, BzImageHeaderIsCopiedAndOnlyTheLoaderFieldsChange) {
  const std::vector<uint8_t> header = BzImageHeader(2047, 0x7fffffff);
  LinuxBootParams p = Params();
  p.setup_header = header;
  ASSERT_TRUE(WriteLinuxBootParams(*memory_, p).ok());
  EXPECT_EQ(Zp<uint8_t>(0x1f1), 27);
  EXPECT_EQ(Zp<uint16_t>(0x20e), 0x3ae0);
  EXPECT_EQ(Zp<uint32_t>(0x230), 0x200000u);
  EXPECT_EQ(Zp<uint16_t>(0x236), 0x7f);
  EXPECT_EQ(Zp<uint32_t>(0x260), 0x2e4c000u);
  EXPECT_EQ(Zp<uint8_t>(0x210), 0xff);
  EXPECT_EQ(Zp<uint8_t>(0x211), 0x01);  // KASLR, KEEP_SEGMENTS, CAN_USE_HEAP cleared
  EXPECT_EQ(Zp<uint16_t>(0x224), 0);
  EXPECT_EQ(Zp<uint64_t>(0x250), 0u);
  EXPECT_EQ(Zp<uint32_t>(0x228), 0x20000u);
  // Past the header's end: zero.
  EXPECT_EQ(Zp<uint32_t>(0x26c), 0u);
}

TEST_F(LinuxBootTest, TheHeadersCmdlineSizeLimitsTheCommandLine) {
  const std::vector<uint8_t> header = BzImageHeader(10, 0x7fffffff);
  LinuxBootParams p = Params();
  p.setup_header = header;
  p.cmdline = "0123456789";
  EXPECT_TRUE(WriteLinuxBootParams(*memory_, p).ok());
  p.cmdline = "0123456789a";
  absl::StatusOr<LinuxBootPlacement> placement = WriteLinuxBootParams(*memory_, p);
  EXPECT_EQ(placement.status().message(), "the command line is 11 bytes; this kernel takes at most 10");
}

TEST_F(LinuxBootTest, WithoutAHeaderTheParamsLimitTheCommandLine) {
  LinuxBootParams p = Params();
  p.cmdline = std::string(2048, 'x');
  EXPECT_EQ(WriteLinuxBootParams(*memory_, p).status().message(),
            "the command line is 2048 bytes; this kernel takes at most 2047");
}

TEST_F(LinuxBootTest, RefusesAHeaderWithoutItsMagic) {
  std::vector<uint8_t> header = BzImageHeader(2047, 0x7fffffff);
  header[0x202 - 0x1f1] = 'X';
  LinuxBootParams p = Params();
  p.setup_header = header;
  EXPECT_EQ(WriteLinuxBootParams(*memory_, p).status().message(),
            "the setup header lacks the boot protocol's 0xAA55 boot flag and \"HdrS\" magic");
}

TEST_F(LinuxBootTest, InitrdGoesPageAlignedAtTheTopOfMemory) {
  std::vector<uint8_t> initrd(kMiB + 100);
  for (size_t i = 0; i < initrd.size(); ++i) initrd[i] = static_cast<uint8_t>(i * 7);
  LinuxBootParams p = Params();
  p.initrd = initrd;
  absl::StatusOr<LinuxBootPlacement> placement = WriteLinuxBootParams(*memory_, p);
  ASSERT_TRUE(placement.ok()) << placement.status();
  const uint64_t expected = (64 * kMiB - initrd.size()) & ~0xfffull;
  EXPECT_EQ(placement->initrd_gpa, expected);
  EXPECT_EQ(placement->initrd_size, initrd.size());
  EXPECT_EQ(Zp<uint32_t>(0x218), expected);
  EXPECT_EQ(Zp<uint32_t>(0x0c0), 0u);
  EXPECT_EQ(Zp<uint32_t>(0x21c), initrd.size());
  EXPECT_EQ(Zp<uint32_t>(0x0c4), 0u);
  std::vector<uint8_t> back(initrd.size());
  ASSERT_TRUE(memory_->Read(expected, back).ok());
  EXPECT_EQ(back, initrd);
}

TEST_F(LinuxBootTest, InitrdStaysBelowTheHeadersInitrdAddrMax) {
  const std::vector<uint8_t> header = BzImageHeader(2047, 40 * kMiB - 1);
  const std::vector<uint8_t> initrd(kMiB);
  LinuxBootParams p = Params();
  p.setup_header = header;
  p.initrd = initrd;
  absl::StatusOr<LinuxBootPlacement> placement = WriteLinuxBootParams(*memory_, p);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->initrd_gpa, 39 * kMiB);

  // The kernel ends at 36 MiB: 5 MiB do not fit below 40 MiB.
  const std::vector<uint8_t> big(5 * kMiB);
  p.initrd = big;
  EXPECT_EQ(WriteLinuxBootParams(*memory_, p).status().message(),
            "the initrd (5 MiB) does not fit between the kernel's end (0x2400000) and the highest "
            "address it takes an initrd at (initrd_addr_max 0x27fffff)");
}

TEST_F(LinuxBootTest, InitrdThatDoesNotFitAboveTheKernelAsksForMoreMemory) {
  MakeMemory(32 * kMiB);
  LinuxBootParams p = Params();
  p.kernel_init_size = 12 * kMiB;  // the kernel ends at 28 MiB
  const std::vector<uint8_t> fits(4 * kMiB);
  p.initrd = fits;
  absl::StatusOr<LinuxBootPlacement> placement = WriteLinuxBootParams(*memory_, p);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->initrd_gpa, 28 * kMiB);

  const std::vector<uint8_t> too_big(4 * kMiB + 1);
  p.initrd = too_big;
  absl::StatusOr<LinuxBootPlacement> refused = WriteLinuxBootParams(*memory_, p);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(refused.status().message(),
            "the initrd (5 MiB) does not fit in guest memory (32 MiB) above the kernel; raise "
            "--memory");
}

TEST_F(LinuxBootTest, RefusesAKernelBeyondGuestMemoryOrBelowOneMiB) {
  MakeMemory(32 * kMiB);
  LinuxBootParams p = Params();
  p.kernel_init_size = 20 * kMiB;
  EXPECT_EQ(WriteLinuxBootParams(*memory_, p).status().message(),
            "the kernel needs guest memory up to 36 MiB but there are 32 MiB; raise --memory");
  p.kernel_load_begin = 0x8000;
  p.kernel_init_size = kMiB;
  EXPECT_EQ(WriteLinuxBootParams(*memory_, p).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(LinuxBootTest, RefusesMemoryTooSmallForTheLayout) {
  MakeMemory(kMiB);
  EXPECT_EQ(WriteLinuxBootParams(*memory_, Params()).status().message(),
            "guest memory of 1 MiB: sigvisor boots Linux with 2 MiB to 3 GiB (below the 32-bit "
            "MMIO hole)");
}

TEST_F(LinuxBootTest, PageTablesIdentityMapFourGiBWithLargePages) {
  ASSERT_TRUE(WriteLinuxBootParams(*memory_, Params()).ok());
  EXPECT_EQ(At<uint64_t>(kLinuxPml4Gpa), 0xa003u);
  EXPECT_EQ(At<uint64_t>(kLinuxPml4Gpa + 8), 0u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(At<uint64_t>(kLinuxPdptGpa + 8 * i), 0xb003u + 0x1000u * i);
  }
  EXPECT_EQ(At<uint64_t>(kLinuxPdptGpa + 32), 0u);
  EXPECT_EQ(At<uint64_t>(kLinuxPdGpa), 0x83u);
  EXPECT_EQ(At<uint64_t>(kLinuxPdGpa + 8 * 8), (8ull << 21) | 0x83);  // 16 MiB: the kernel
  EXPECT_EQ(At<uint64_t>(kLinuxPdGpa + 8 * 2047), (2047ull << 21) | 0x83);
}

TEST_F(LinuxBootTest, GdtHoldsTheBootProtocolsSelectorsAndABusyTss) {
  ASSERT_TRUE(WriteLinuxBootParams(*memory_, Params()).ok());
  EXPECT_EQ(At<uint64_t>(0x500), 0u);
  EXPECT_EQ(At<uint64_t>(0x508), 0x00cf9b000000ffffull);  // 0x08 code32
  EXPECT_EQ(At<uint64_t>(0x510), 0x00af9b000000ffffull);  // 0x10 __BOOT_CS, L=1
  EXPECT_EQ(At<uint64_t>(0x518), 0x00cf93000000ffffull);  // 0x18 __BOOT_DS
  EXPECT_EQ(At<uint64_t>(0x520), 0x00008b0005800067ull);  // 0x20 busy TSS at 0x580
  EXPECT_EQ(At<uint64_t>(0x528), 0u);
  EXPECT_EQ(At<uint16_t>(0x580 + 0x66), 0x68);
}

TEST_F(LinuxBootTest, PvhStartInfoDescribesCmdlineInitrdAndMemoryMap) {
  const std::vector<uint8_t> initrd(3 * kMiB);
  LinuxBootParams p = Params();
  p.initrd = initrd;
  p.vcpus = 2;
  absl::StatusOr<LinuxBootPlacement> placement = WritePvhStartInfo(*memory_, p);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->initrd_gpa, 61 * kMiB);

  const uint64_t info = kLinuxPvhStartInfoGpa;
  EXPECT_EQ(At<uint32_t>(info), 0x336ec578u);
  EXPECT_EQ(At<uint32_t>(info + 4), 1u);   // version
  EXPECT_EQ(At<uint32_t>(info + 8), 0u);   // flags
  EXPECT_EQ(At<uint32_t>(info + 12), 1u);  // nr_modules
  const uint64_t modlist = At<uint64_t>(info + 16);
  EXPECT_EQ(modlist, kLinuxPvhModlistGpa);
  EXPECT_EQ(String(At<uint64_t>(info + 24), 4096), "console=ttyS0 nokaslr");
  EXPECT_EQ(At<uint64_t>(info + 32), 0u);  // no RSDP
  const uint64_t memmap = At<uint64_t>(info + 40);
  EXPECT_EQ(memmap, kLinuxPvhMemmapGpa);
  ASSERT_EQ(At<uint32_t>(info + 48), 4u);
  EXPECT_EQ(At<uint32_t>(info + 52), 0u);

  EXPECT_EQ(At<uint64_t>(modlist), 61 * kMiB);
  EXPECT_EQ(At<uint64_t>(modlist + 8), 3 * kMiB);
  EXPECT_EQ(At<uint64_t>(modlist + 16), 0u);

  const uint64_t expected[4][3] = {
      {0, 0x9fc00, 1}, {0x9fc00, 0x400, 2}, {0xf0000, 0x10000, 2}, {kMiB, 63 * kMiB, 1}};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(At<uint64_t>(memmap + 24 * i), expected[i][0]);
    EXPECT_EQ(At<uint64_t>(memmap + 24 * i + 8), expected[i][1]);
    EXPECT_EQ(At<uint32_t>(memmap + 24 * i + 16), expected[i][2]);
    EXPECT_EQ(At<uint32_t>(memmap + 24 * i + 20), 0u);
  }
  // Two processor entries in the MP table.
  EXPECT_EQ(At<uint16_t>(0xf0010 + 34), 2 + 1 + 1 + 16 + 2);
}

TEST_F(LinuxBootTest, PvhWithoutInitrdHasNoModules) {
  ASSERT_TRUE(WritePvhStartInfo(*memory_, Params()).ok());
  EXPECT_EQ(At<uint32_t>(kLinuxPvhStartInfoGpa + 12), 0u);
  EXPECT_EQ(At<uint64_t>(kLinuxPvhStartInfoGpa + 16), 0u);
}

TEST(LinuxEntryGpaTest, PhysicalEntryIsKeptAndVirtualIsTranslated) {
  const std::vector<ElfSegment> segments = {
      {.paddr = 0x1000000, .vaddr = 0xffffffff81000000, .memsz = 0x1400000, .flags = PF_R | PF_X},
      {.paddr = 0x2400000, .vaddr = 0xffffffff82400000, .memsz = 0x100000, .flags = PF_R | PF_W},
  };
  absl::StatusOr<uint64_t> physical = LinuxEntryGpa(0x1000000, segments);
  ASSERT_TRUE(physical.ok()) << physical.status();
  EXPECT_EQ(*physical, 0x1000000u);
  absl::StatusOr<uint64_t> virt = LinuxEntryGpa(0xffffffff81000200, segments);
  ASSERT_TRUE(virt.ok()) << virt.status();
  EXPECT_EQ(*virt, 0x1000200u);
  // Not in executable memory.
  EXPECT_EQ(LinuxEntryGpa(0xffffffff82400000, segments).status().message(),
            "the kernel's entry 0xffffffff82400000 is in no executable PT_LOAD segment, "
            "physical or virtual");
}

TEST(LinuxLapicTest, Lint0IsExtIntAndLint1IsNmi) {
  kvm_lapic_state lapic = {};
  const uint32_t masked = 0x10000;  // KVM's reset LVT: masked, fixed delivery
  std::memcpy(lapic.regs + 0x350, &masked, 4);
  std::memcpy(lapic.regs + 0x360, &masked, 4);
  SetVirtualWireLints(lapic);
  uint32_t lint0, lint1;
  std::memcpy(&lint0, lapic.regs + 0x350, 4);
  std::memcpy(&lint1, lapic.regs + 0x360, 4);
  EXPECT_EQ(lint0, 0x10700u);
  EXPECT_EQ(lint1, 0x10400u);
}

}  // namespace
}  // namespace sigvisor::x86
