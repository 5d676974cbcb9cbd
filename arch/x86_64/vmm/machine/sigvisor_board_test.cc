// What the sigvisor board refuses of a machine of several vCPUs (no KVM needed): a
// uniprocessor build, more vCPUs than the build's SMP note, a trap mechanism, a
// snapshot, --ipi on one vCPU or for another kind of guest; and what it gives an SMP
// build (the x2APIC in CPUID).
#include "arch/x86_64/vmm/machine/sigvisor_board.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_test_builder.h"

namespace sigvisor::x86 {
namespace {

using ::testing::HasSubstr;

ElfImage Image(uint32_t smp_max_cpus) {
  testing::ElfBuilder builder = testing::ValidGuest();
  if (smp_max_cpus != 0) {
    builder.AddNote({.owner = "sigvisor",
                     .type = SIGVISOR_NOTE_TYPE_SMP,
                     .desc = {static_cast<uint8_t>(smp_max_cpus), 0, 0, 0}});
  }
  absl::StatusOr<ElfImage> image = ElfImage::Parse(builder.Build().bytes);
  EXPECT_TRUE(image.ok()) << image.status();
  return *image;
}

MachineConfig Config(int vcpus) {
  MachineConfig config;
  config.target = SigvisorKernel{};
  config.vcpus = vcpus;
  return config;
}

void ExpectRefused(const absl::StatusOr<std::unique_ptr<Board>>& board, const std::string& what) {
  ASSERT_FALSE(board.ok()) << "made a board; expected a refusal with: " << what;
  EXPECT_THAT(std::string(board.status().message()), HasSubstr(what));
  EXPECT_EQ(board.status().message().find('\n'), std::string::npos) << board.status();
}

TEST(SigvisorBoardTest, SeveralVcpusNeedAnSmpBuild) {
  ExpectRefused(MakeBoard(Image(0), Config(2)),
                "--vcpus 2: this build of the kernel is uniprocessor (no SMP note); give "
                "--variant smp=on (or a variant's smp=on counterpart)");
  ExpectRefused(MakeBoard(Image(4), Config(5)),
                "--vcpus 5: this build of the kernel runs on at most 4 CPUs (its SMP note)");
  EXPECT_TRUE(MakeBoard(Image(4), Config(4)).ok());
  EXPECT_TRUE(MakeBoard(Image(8), Config(2)).ok());
  // One vCPU: any build, as before.
  EXPECT_TRUE(MakeBoard(Image(0), Config(1)).ok());
  EXPECT_TRUE(MakeBoard(Image(8), Config(1)).ok());
}

TEST(SigvisorBoardTest, SeveralVcpusRunWithTrapOffOnly) {
  for (TrapMechanism trap : {TrapMechanism::kPatch, TrapMechanism::kHwGd, TrapMechanism::kPv}) {
    MachineConfig config = Config(2);
    config.trap = trap;
    ExpectRefused(MakeBoard(Image(8), config),
                  "the trap engine watches vCPU 0 only: --trap off with --vcpus > 1");
  }
}

TEST(SigvisorBoardTest, SeveralVcpusAreNotSavedInjectedOrDebuggedYet) {
  MachineConfig saving = Config(2);
  saving.save_to = "/tmp/never-written";
  ExpectRefused(MakeBoard(Image(8), saving), "cannot be saved as a snapshot yet (not yet)");
  MachineConfig injecting = Config(2);
  injecting.injection_events = true;
  ExpectRefused(MakeBoard(Image(8), injecting), "--inject with --vcpus 2");
  MachineConfig debugging = Config(3);
  debugging.interceptors.push_back(
      [](MachineContext&) { return absl::StatusOr<std::unique_ptr<ExitInterceptor>>(nullptr); });
  ExpectRefused(MakeBoard(Image(8), debugging), "--gdb with --vcpus 3");
}

TEST(SigvisorBoardTest, IpiMethodOnlyOnSeveralVcpusOfTheBundledKernel) {
  MachineConfig one = Config(1);
  one.ipi = IpiMethod::kPv;
  ExpectRefused(MakeBoard(Image(8), one), "--ipi pv: a machine of one vCPU sends no IPIs");
  MachineConfig two = Config(2);
  for (IpiMethod ipi : {IpiMethod::kX2apic, IpiMethod::kXapic, IpiMethod::kPv}) {
    two.ipi = ipi;
    EXPECT_TRUE(MakeBoard(Image(8), two).ok()) << IpiMethodName(ipi);
  }
  MachineConfig linux = Config(2);
  linux.target = LinuxKernel{};
  linux.ipi = IpiMethod::kXapic;
  ExpectRefused(MakeBoard(Image(0), linux),
                "--ipi xapic is for the bundled kernel built with smp=on");
}

TEST(SigvisorBoardTest, IpiMethodNamesAndAbiWords) {
  for (IpiMethod ipi : {IpiMethod::kX2apic, IpiMethod::kXapic, IpiMethod::kPv}) {
    absl::StatusOr<IpiMethod> parsed = ParseIpiMethod(IpiMethodName(ipi));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, ipi);
  }
  EXPECT_EQ(IpiMethodAbi(IpiMethod::kX2apic), SIGVISOR_IPI_X2APIC);
  EXPECT_EQ(IpiMethodAbi(IpiMethod::kXapic), SIGVISOR_IPI_XAPIC);
  EXPECT_EQ(IpiMethodAbi(IpiMethod::kPv), SIGVISOR_IPI_PV);
  const absl::Status bad = ParseIpiMethod("x2APIC").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("give x2apic"));
}

TEST(SigvisorBoardTest, AnSmpMachineShowsTheX2apic) {
  std::vector<kvm_cpuid_entry2> supported(2);
  supported[0].function = 0;
  supported[1].function = 1;
  supported[1].ecx = 0x1;
  absl::StatusOr<std::unique_ptr<Board>> two = MakeBoard(Image(8), Config(2));
  ASSERT_TRUE(two.ok()) << two.status();
  const std::vector<kvm_cpuid_entry2> cpuid = (*two)->Cpuid(supported);
  ASSERT_EQ(cpuid.size(), 2u);
  EXPECT_EQ(cpuid[1].ecx, 0x1u | (1u << 21));
  EXPECT_TRUE((*two)->aps_start_by_hypercall());
  absl::StatusOr<std::unique_ptr<Board>> one = MakeBoard(Image(8), Config(1));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)->Cpuid(supported)[1].ecx, 0x1u);  // one vCPU: KVM's table as it is
}

}  // namespace
}  // namespace sigvisor::x86
