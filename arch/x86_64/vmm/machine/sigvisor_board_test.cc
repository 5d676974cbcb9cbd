// What the sigvisor board refuses of a machine of several vCPUs (no KVM needed): a
// uniprocessor build, more vCPUs than the build's SMP note, a trap mechanism, --ipi on
// one vCPU or for another kind of guest; what a restore of several vCPUs takes from
// its snapshot and refuses; and what it gives an SMP build (the x2APIC in CPUID).
#include "arch/x86_64/vmm/machine/sigvisor_board.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/base/fnv1a.h"
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

TEST(SigvisorBoardTest, SeveralVcpusAreSavedButNotInjectedOrDebugged) {
  MachineConfig saving = Config(2);
  saving.save_to = "/tmp/never-written";
  EXPECT_TRUE(MakeBoard(Image(8), saving).ok());
  MachineConfig injecting = Config(2);
  injecting.injection_events = true;
  ExpectRefused(MakeBoard(Image(8), injecting), "--inject with --vcpus 2");
  MachineConfig debugging = Config(3);
  debugging.interceptors.push_back(
      [](MachineContext&) { return absl::StatusOr<std::unique_ptr<ExitInterceptor>>(nullptr); });
  ExpectRefused(MakeBoard(Image(8), debugging), "--gdb with --vcpus 3");
}

// A restored VM of `image` saved with `vcpus` vCPUs, `ipi` and `lapic` ("" on one).
MachineConfig Restoring(const ElfImage& image, uint32_t vcpus, std::string ipi, std::string lapic) {
  auto saved = std::make_shared<SavedVm>();
  saved->dir = "/snap";
  saved->header = NewSnapshotHeader(Fnv1a64(image.bytes()), "kernel", "smp=on", "test", "hardware");
  saved->header.memory_bytes = 32ull << 20;
  saved->header.vcpus = vcpus;
  saved->header.ipi = std::move(ipi);
  saved->header.lapic = std::move(lapic);
  saved->header.trap = "off";
  saved->aps.resize(vcpus - 1);
  MachineConfig config = Config(1);
  config.target = RestoredVm{saved, BootProtocol::kSigvisor, Fnv1a64(image.bytes())};
  EXPECT_TRUE(TakeSavedMachine(saved->header, config).ok());
  return config;
}

TEST(SigvisorBoardTest, ARestoreRunsTheMachineItsSnapshotWasSavedWith) {
  const ElfImage image = Image(8);
  MachineConfig config = Restoring(image, 2, "xapic", "vmm");
  EXPECT_EQ(config.vcpus, 2);
  EXPECT_EQ(config.ipi, IpiMethod::kXapic);
  EXPECT_EQ(config.lapic, Lapic::kVmm);
  EXPECT_TRUE(MakeBoard(image, config).ok());
  // Another machine than the saved one (a bench build that names another).
  config.ipi = IpiMethod::kPv;
  ExpectRefused(MakeBoard(image, config),
                "holds a VM of 2 vCPUs booted with --ipi xapic --lapic vmm; this run asks for "
                "--ipi pv --lapic vmm");
  config = Restoring(image, 2, "xapic", "vmm");
  config.vcpus = 3;
  ExpectRefused(MakeBoard(image, config), "2 vCPUs; the run asks for 32 MiB and 3");
  // What no SMP run takes, restored or booted.
  config = Restoring(image, 2, "pv", "kvm");
  config.trap = TrapMechanism::kPatch;
  ExpectRefused(MakeBoard(image, config), "--trap off with --vcpus > 1");
  config = Restoring(image, 2, "pv", "kvm");
  config.interceptors.push_back(
      [](MachineContext&) { return absl::StatusOr<std::unique_ptr<ExitInterceptor>>(nullptr); });
  config.interceptors_trace_only = true;
  ExpectRefused(MakeBoard(image, config), "the step tracer follows vCPU 0 only");
  // One vCPU: no IPI way to take.
  config = Restoring(image, 1, "", "");
  EXPECT_EQ(config.vcpus, 1);
  EXPECT_FALSE(config.ipi.has_value());
  EXPECT_TRUE(MakeBoard(image, config).ok());
  config.ipi = IpiMethod::kPv;
  ExpectRefused(MakeBoard(image, config),
                "holds a VM of one vCPU: it cannot be restored with --ipi");
}

TEST(SigvisorBoardTest, ASnapshotNamingAnUnknownMachineIsRefused) {
  SnapshotHeader header;
  header.vcpus = 2;
  header.ipi = "carrier-pigeon";
  header.lapic = "kvm";
  MachineConfig config = Config(1);
  const absl::Status status = TakeSavedMachine(header, config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("'carrier-pigeon'"));
  header.ipi = "";  // one named, one not: no machine sigvisor saves
  EXPECT_EQ(TakeSavedMachine(header, config).code(), absl::StatusCode::kInvalidArgument);
}

// Linux on several vCPUs chooses neither: its snapshot names none, and its restore runs
// KVM's APICs with the guest's own IPIs.
TEST(SigvisorBoardTest, ASnapshotOfLinuxOnSeveralVcpusNamesNoIpiWay) {
  SnapshotHeader header;
  header.vcpus = 2;
  MachineConfig config = Config(1);
  config.ipi = IpiMethod::kPv;
  ASSERT_TRUE(TakeSavedMachine(header, config).ok());
  EXPECT_EQ(config.vcpus, 2);
  EXPECT_FALSE(config.ipi.has_value());
  EXPECT_FALSE(config.lapic.has_value());
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

// KVM_GET_SUPPORTED_CPUID names the host CPU that ran it; the guest's CPUID names its
// own vCPU, whichever host CPU the VMM ran on (a snapshot's then compares equal).
TEST(SigvisorBoardTest, EachVcpusCpuidNamesItAndNotTheHostCpu) {
  auto host_cpu = [](uint32_t apic_id) {
    std::vector<kvm_cpuid_entry2> supported(4);
    supported[0].function = 1;
    supported[0].ebx = (apic_id << 24) | (16u << 16) | 0x0800;
    supported[1].function = 0xb;
    supported[1].edx = apic_id;
    supported[2].function = 0x1f;
    supported[2].edx = apic_id;
    supported[3].function = 0x8000001e;
    supported[3].eax = apic_id;
    return supported;
  };
  const std::vector<kvm_cpuid_entry2> on_cpu_2 = VcpuCpuid(host_cpu(2), 0, 1);
  const std::vector<kvm_cpuid_entry2> on_cpu_7 = VcpuCpuid(host_cpu(7), 0, 1);
  for (size_t i = 0; i < on_cpu_2.size(); ++i) {
    EXPECT_EQ(on_cpu_2[i].eax, on_cpu_7[i].eax) << i;
    EXPECT_EQ(on_cpu_2[i].ebx, on_cpu_7[i].ebx) << i;
    EXPECT_EQ(on_cpu_2[i].edx, on_cpu_7[i].edx) << i;
  }
  EXPECT_EQ(on_cpu_2[0].ebx, (1u << 16) | 0x0800);  // APIC ID 0, one CPU
  EXPECT_EQ(on_cpu_2[0].edx & (1u << 28), 0u);      // no HTT
  const std::vector<kvm_cpuid_entry2> ap = VcpuCpuid(host_cpu(7), 3, 4);
  EXPECT_EQ(ap[0].ebx, (3u << 24) | (4u << 16) | 0x0800);
  EXPECT_NE(ap[0].edx & (1u << 28), 0u);
  EXPECT_EQ(ap[1].edx, 3u);
  EXPECT_EQ(ap[2].edx, 3u);
  EXPECT_EQ(ap[3].eax, 3u);
}

}  // namespace
}  // namespace sigvisor::x86
