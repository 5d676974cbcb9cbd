// Snapshots (docs/snapshots.md): a VM saved at its guest's quiescent point and restored
// runs every workload with the per-op counts of a booted run, under every trap
// mechanism the host gives; two restores of one snapshot run side by side and agree; a
// restored trace is the booted one; the shards of a bench restore one saved set of
// snapshots with a booting bench's counts; a VM of several vCPUs restores with every
// vCPU's counts; and a snapshot that cannot be reproduced exactly is refused in one
// line before a vCPU runs. The counts compared are the
// ledger's and the trap engine's (exits, traps, DR loads per op) and, where the host
// counts them (PVM), kernel instructions per op.
//
// Both lanes: this is a KVM test (tags = ["kvm"]); the refusals that need no KVM run
// everywhere.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "vmm/report/testing/json_schema.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;
using ::sigvisor::testing::DocsSchema;
using json = nlohmann::json;

// Small enough for the hardware lane (TCG) and a PVM host alike; counts per op do not
// depend on it.
constexpr char kOps[] = "4";
const std::vector<std::string> kWorkloads = {"divzero", "lat_sig", "sigpingpong", "pipe_rw",
                                             "hello"};

json Parse(const CommandResult& r) {
  json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  return doc;
}

// The text with every number as '#': the timings the guest prints differ run to run.
std::string MaskNumbers(const json& text) {
  return std::regex_replace(text.get<std::string>(), std::regex("[0-9]+"), "#");
}

// Each phase's per-op counts that must not depend on how the VM started: name ->
// {exits, traps, dr_loads, kernel_insns (null where the host does not count)}.
std::map<std::string, json> PerOpCounts(const json& run) {
  std::map<std::string, json> counts;
  for (const json& phase : run["phases"]) {
    const json& per_op = phase["per_op"];
    counts[phase["name"].get<std::string>()] = {
        {"exits", per_op["exits"]},
        {"traps", per_op["traps"]},
        {"dr_loads", per_op["dr_loads"]},
        {"kernel_insns", per_op.value("kernel_insns", json(nullptr))}};
  }
  return counts;
}

std::string Snapshot(const std::string& name, const std::string& flags = "") {
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  const CommandResult r = Sigvisor("snapshot --json --out " + dir + " " + flags);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return "";
  json doc = Parse(r);
  for (const std::string& error :
       sigvisor::testing::ValidateJson(doc, DocsSchema("sigvisor.snapshot-1.schema.json"))) {
    ADD_FAILURE() << error;
  }
  return dir;
}

// `r`'s document, checked against the schema file `schema` of docs/schema.
json ValidDoc(const CommandResult& r, const std::string& schema) {
  json doc = Parse(r);
  for (const std::string& error : sigvisor::testing::ValidateJson(doc, DocsSchema(schema))) {
    ADD_FAILURE() << error;
  }
  return doc;
}

// Two bench documents' cells, in order: the same cell with the same per-op counts.
void ExpectSameCells(const json& booted, const json& other) {
  ASSERT_EQ(other["cells"].size(), booted["cells"].size());
  for (size_t i = 0; i < booted["cells"].size(); ++i) {
    const json& a = booted["cells"][i];
    const json& b = other["cells"][i];
    SCOPED_TRACE(a["workload"].dump() + " " + a["variant"].dump() + " " + a["trap"].dump());
    EXPECT_EQ(b["workload"], a["workload"]);
    EXPECT_EQ(b["variant"], a["variant"]);
    EXPECT_EQ(b["trap"], a["trap"]);
    EXPECT_EQ(b["per_op"], a["per_op"]);
  }
}

// `booted` and `restored`, both exited 0, parsed; the restored one valid under `schema`
// and naming `dir` as where it came from.
std::pair<json, json> BootedAndRestored(const CommandResult& booted, const CommandResult& restored,
                                        const std::string& dir, const std::string& schema) {
  EXPECT_EQ(booted.status, 0) << booted.err;
  EXPECT_EQ(restored.status, 0) << restored.err;
  if (booted.status != 0 || restored.status != 0) return {};
  json booted_doc = Parse(booted), restored_doc = ValidDoc(restored, schema);
  EXPECT_EQ(restored_doc["restored_from"], dir);
  EXPECT_TRUE(booted_doc.value("restored_from", json(nullptr)).is_null());  // absent or null
  return {std::move(booted_doc), std::move(restored_doc)};
}

// The booted run and the restored run of `workload` under `trap`, compared.
void ExpectRestoredLikeBooted(const std::string& dir, const std::string& variant,
                              const std::string& workload, const std::string& trap) {
  SCOPED_TRACE(variant + " " + workload + " --trap=" + trap);
  const std::string common =
      " --json --quiet --workload " + workload + " --ops " + kOps + " --trap=" + trap;
  const auto [booted_doc, restored_doc] = BootedAndRestored(
      Sigvisor("run --variant " + variant + common), Sigvisor("run --restore " + dir + common), dir,
      "sigvisor.run-2.schema.json");
  if (restored_doc.is_null()) return;
  EXPECT_TRUE(restored_doc["timing"]["boot_ns"].is_null());
  EXPECT_EQ(restored_doc["cmdline"], booted_doc["cmdline"]);
  // The same output, up to the timings the guest prints.
  EXPECT_EQ(MaskNumbers(restored_doc["console"]), MaskNumbers(booted_doc["console"]));
  const auto booted_counts = PerOpCounts(booted_doc);
  EXPECT_FALSE(booted_counts.empty());
  EXPECT_EQ(PerOpCounts(restored_doc), booted_counts);
}

TEST(SnapshotTest, RestoredRunsCountAsBootedOnesForEveryWorkloadAndTrapMechanism) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("baseline.snap");
  ASSERT_FALSE(dir.empty());
  for (const char* trap : {"off", "patch", "hw-gd"}) {
    // hw-gd is refused where the host's GD never exits (`sigvisor probe`): then there is
    // no booted run to compare with, and the restore must refuse it the same way.
    const CommandResult probe =
        Sigvisor(std::string("run --quiet --workload hello --ops 1 --trap=") + trap);
    if (probe.status == 125) {
      EXPECT_EQ(
          Sigvisor("run --quiet --restore " + dir + " --workload hello --trap=" + std::string(trap))
              .status,
          125);
      continue;
    }
    for (const std::string& workload : kWorkloads) {
      ExpectRestoredLikeBooted(dir, "baseline", workload, trap);
    }
  }
}

TEST(SnapshotTest, APvKernelRestoresWithItsPvPage) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("pv.snap", "--variant debugreg=pv --trap=pv");
  ASSERT_FALSE(dir.empty());
  for (const char* workload : {"divzero", "lat_sig"}) {
    ExpectRestoredLikeBooted(dir, "debugreg=pv", workload, "pv");
  }
  ExpectOneLineError(Sigvisor("run --restore " + dir + " --trap=patch"), "--trap=pv");
}

TEST(SnapshotTest, TwoRestoresOfOneSnapshotRunTogetherAndAgree) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("shared.snap");
  ASSERT_FALSE(dir.empty());
  const std::string args = " --json --quiet --workload lat_sig --ops 4 --restore " + dir + " >";
  // Both processes at once, through the shell, each with its own output file.
  const std::string a = TempPath("restore_a.json"), b = TempPath("restore_b.json");
  const std::string command = "vmm/app/cli/sigvisor run" + args + a +
                              " 2>/dev/null & vmm/app/cli/sigvisor run" + args + b +
                              " 2>/dev/null & wait";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const json first = json::parse(sigvisor::testing::Slurp(a), nullptr, false);
  const json second = json::parse(sigvisor::testing::Slurp(b), nullptr, false);
  ASSERT_FALSE(first.is_discarded());
  ASSERT_FALSE(second.is_discarded());
  EXPECT_EQ(first["outcome"], "exited");
  EXPECT_EQ(PerOpCounts(first), PerOpCounts(second));
  // Each read pages of the image (the kernel's code, which it never writes) and wrote
  // pages of its own: what it costs beside the other is only the latter.
  for (const json* run : {&first, &second}) {
    const json& memory = (*run)["guest_memory"];
    ASSERT_TRUE(memory.is_object()) << run->dump();
    EXPECT_EQ(memory["mapped_bytes"], 32u << 20);
    EXPECT_GT(memory["shared_bytes"].get<uint64_t>(), 0u) << memory;
    EXPECT_GT(memory["private_bytes"].get<uint64_t>(), 0u) << memory;
    EXPECT_EQ(memory["private_bytes"].get<uint64_t>() + memory["shared_bytes"].get<uint64_t>(),
              memory["resident_bytes"].get<uint64_t>());
  }
  // Neither wrote into the snapshot: its memory is mapped copy-on-write.
  EXPECT_EQ(Sigvisor("run --quiet --workload hello --restore " + dir).status, 0);
}

// bench --restore: every cell's per-op counts are those of a bench that boots, for
// two builds and two trap mechanisms, and with --traps pv the pv counterparts'.
TEST(SnapshotTest, BenchRestoreCountsAsBenchBoot) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string matrix =
      " --json --workloads divzero,lat_sig --variants 'baseline; accelerated' "
      "--traps off,patch,pv --repetitions 1 --ops 4";
  const CommandResult booted = Sigvisor("bench" + matrix);
  ASSERT_EQ(booted.status, 0) << booted.err;
  const CommandResult restored = Sigvisor("bench --restore" + matrix);
  ASSERT_EQ(restored.status, 0) << restored.err;
  const json booted_doc = Parse(booted),
             restored_doc = ValidDoc(restored, "sigvisor.bench-1.schema.json");
  EXPECT_TRUE(restored_doc["matrix"]["restored"].get<bool>());
  EXPECT_FALSE(booted_doc["matrix"]["restored"].get<bool>());
  ASSERT_EQ(restored_doc["cells"].size(), booted_doc["cells"].size());
  ASSERT_EQ(booted_doc["cells"].size(), 3u * 2u * 3u);  // 3 phases x 2 builds x 3 mechanisms
  ExpectSameCells(booted_doc, restored_doc);
  // Its scratch snapshots are gone.
  EXPECT_EQ(restored.err.find("sigvisor: error"), std::string::npos) << restored.err;
}

// trace --restore: the trace of a restored VM is the booted one's, instruction for
// instruction: the same kernel instructions per op (on both host kinds: the trace counts
// them where KVM does not), the same profile and the same stages of signal delivery.
TEST(SnapshotTest, ARestoredTraceIsTheBootedTrace) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("trace.snap");
  ASSERT_FALSE(dir.empty());
  const std::string op = " --workload divzero --ops 1";
  const auto [booted_doc, restored_doc] = BootedAndRestored(
      Sigvisor("trace --json" + op), Sigvisor("trace --json --restore " + dir + op), dir,
      "sigvisor.trace-1.schema.json");
  ASSERT_FALSE(restored_doc.is_null());
  EXPECT_TRUE(restored_doc["complete"].get<bool>()) << restored_doc["stopped_why"];
  EXPECT_EQ(restored_doc["cmdline"], booted_doc["cmdline"]);
  const json& per_op = restored_doc["counts"]["per_op"];
  ASSERT_EQ(per_op.size(), 1u) << restored_doc["counts"];
  EXPECT_GT(per_op[0].get<uint64_t>(), 0u);
  EXPECT_EQ(per_op, booted_doc["counts"]["per_op"]);
  EXPECT_EQ(restored_doc["counts"]["marker_kernel_insns"],
            booted_doc["counts"]["marker_kernel_insns"]);
  // Where KVM counts kernel instructions (PVM), the restored run's ledger agrees too.
  EXPECT_EQ(restored_doc["counts"]["matches_ledger"], booted_doc["counts"]["matches_ledger"]);
  EXPECT_EQ(restored_doc["profile"], booted_doc["profile"]);
  ASSERT_FALSE(booted_doc["stages"].empty());
  EXPECT_EQ(restored_doc["stages"], booted_doc["stages"]);
  // And the text: the same summary and stage table, up to the numbers (compared above).
  const CommandResult booted_text = Sigvisor("trace --stages" + op);
  const CommandResult restored_text = Sigvisor("trace --stages --restore " + dir + op);
  ASSERT_EQ(restored_text.status, 0) << restored_text.err;
  EXPECT_EQ(MaskNumbers(json(restored_text.out)), MaskNumbers(json(booted_text.out)));
}

// bench --save-snapshots DIR, then shards of one bench with --snapshots DIR: the shards,
// merged, count as a bench that boots, cell for cell, for two builds and three trap
// mechanisms (pv restoring the builds' debugreg=pv counterparts); each snapshot in DIR
// is one `run --restore` takes; and a DIR whose snapshot does not fit is refused.
TEST(SnapshotTest, ShardsRestoringOneSavedSetCountAsABootingBench) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = TempPath("bench.snaps");
  std::filesystem::remove_all(dir);
  const std::string builds = " --variants 'baseline; accelerated' --traps off,patch,pv";
  const CommandResult saved = Sigvisor("bench --save-snapshots " + dir + builds);
  ASSERT_EQ(saved.status, 0) << saved.err;
  for (const std::string build :
       {"baseline", "accelerated", "debugreg=pv", "accelerated,debugreg=pv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + build + "/state")) << build;
    EXPECT_NE(saved.out.find(dir + "/" + build + "\n"), std::string::npos) << saved.out;
  }
  EXPECT_EQ(Sigvisor("run --quiet --workload hello --restore '" + dir + "/accelerated,debugreg=pv'")
                .status,
            0);

  const std::string matrix = " --json --workloads divzero,lat_sig --repetitions 1 --ops 4" + builds;
  const CommandResult booted = Sigvisor("bench" + matrix);
  ASSERT_EQ(booted.status, 0) << booted.err;
  std::string shards;
  for (const std::string shard : {"1", "2"}) {
    const CommandResult part =
        Sigvisor("bench --snapshots " + dir + matrix + " --shard " + shard + "/2");
    ASSERT_EQ(part.status, 0) << part.err;
    const std::string file = TempPath("restored_shard" + shard + ".json");
    std::ofstream(file) << part.out;
    shards += " " + file;
  }
  const CommandResult merged = Sigvisor("merge --json" + shards);
  ASSERT_EQ(merged.status, 0) << merged.err;
  const json booted_doc = Parse(booted),
             merged_doc = ValidDoc(merged, "sigvisor.bench-1.schema.json");
  EXPECT_TRUE(merged_doc["matrix"]["restored"].get<bool>());
  EXPECT_TRUE(merged_doc["complete"].get<bool>());
  ASSERT_EQ(booted_doc["cells"].size(), 3u * 2u * 3u);  // 3 phases x 2 builds x 3 mechanisms
  ASSERT_EQ(merged_doc["cells"].size(), booted_doc["cells"].size());
  ExpectSameCells(booted_doc, merged_doc);
  // The snapshots are still there for the next bench: --snapshots removes nothing.
  EXPECT_TRUE(std::filesystem::exists(dir + "/baseline/memory"));

  // Another build's snapshot where accelerated's should be.
  const std::string wrong_build = TempPath("wrong_build.snaps");
  std::filesystem::remove_all(wrong_build);
  std::filesystem::create_directories(wrong_build);
  std::filesystem::copy(dir + "/baseline", wrong_build + "/accelerated");
  ExpectOneLineError(Sigvisor("bench --snapshots " + wrong_build +
                              " --variants accelerated --traps off --workloads divzero --ops 1 "
                              "--repetitions 1"),
                     "another image");
  // A snapshot of other RAM than the bench's.
  const std::string other_ram = TempPath("other_ram.snaps");
  std::filesystem::remove_all(other_ram);
  std::filesystem::create_directories(other_ram);
  ASSERT_EQ(Sigvisor("snapshot --memory 64 --out " + other_ram + "/baseline").status, 0);
  ExpectOneLineError(Sigvisor("bench --snapshots " + other_ram +
                              " --variants baseline --traps off --workloads divzero --ops 1 "
                              "--repetitions 1"),
                     "64 MiB");
}

// What a restored SMP run must repeat of a booted one, vCPU by vCPU, for the phase
// `workload`: the guest's own IPI counts and the exits that reached the VMM for a
// device (port I/O, MMIO, MSRs: the IPI way's and the APIC's). Halts, and with the
// VMM's APICs the kicks that end them, follow the host's timing in both and are left out.
json VcpuCounts(const json& run, const std::string& workload) {
  json counts = json::array();
  for (const json& phase : run["phases"]) {
    if (phase["name"] != workload || !phase.contains("vcpus")) continue;
    for (const json& v : phase["vcpus"]) {
      const json& by_reason = v["exits"]["by_reason"];
      counts.push_back({{"vcpu", v["vcpu"]},
                        {"guest_ipis", v.value("guest_ipis", json(nullptr))},
                        {"io", by_reason.value("io", 0)},
                        {"mmio", by_reason.value("mmio", 0)},
                        {"msr", by_reason.value("msr", 0)}});
    }
  }
  return counts;
}

// Several vCPUs: the bundled kernel is saved before it starts its APs, and a restore
// runs the machine it was saved with (vCPUs, IPI way, local APICs), each vCPU with the
// booted run's IPIs and device exits, for every IPI way on KVM's APICs and on the
// VMM's. A bench of an SMP build restores too, with a booting bench's cells.
TEST(SnapshotTest, SeveralVcpusRestoreWithTheBootedRunsCountsOnEveryVcpu) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::vector<std::pair<std::string, std::string>> machines = {
      {"x2apic", "kvm"}, {"xapic", "kvm"}, {"pv", "kvm"}, {"x2apic", "vmm"}};
  for (const auto& [ipi, lapic] : machines) {
    SCOPED_TRACE("--ipi " + ipi + " --lapic " + lapic);
    const std::string machine = " --vcpus 2 --ipi " + ipi + " --lapic " + lapic;
    const std::string dir = Snapshot("smp_" + ipi + "_" + lapic + ".snap", machine);
    ASSERT_FALSE(dir.empty());
    const std::vector<std::string> workloads =
        ipi == "x2apic" && lapic == "kvm"
            ? std::vector<std::string>{"xcpu_pingpong", "xcpu_kick", "xcpu_wake"}
            : std::vector<std::string>{"xcpu_pingpong"};
    for (const std::string& workload : workloads) {
      SCOPED_TRACE(workload);
      const std::string orders = " --json --quiet --workload " + workload + " --ops " + kOps;
      const auto [booted_doc, restored_doc] = BootedAndRestored(
          Sigvisor("run" + machine + orders), Sigvisor("run --restore " + dir + orders), dir,
          "sigvisor.run-2.schema.json");
      if (restored_doc.is_null()) continue;
      EXPECT_EQ(restored_doc["ipi"], ipi);
      EXPECT_EQ(restored_doc["lapic"], lapic);
      const json booted_counts = VcpuCounts(booted_doc, workload);
      ASSERT_EQ(booted_counts.size(), 2u) << booted_doc.dump();
      EXPECT_EQ(booted_counts[1]["guest_ipis"]["received"], std::stoi(kOps));
      EXPECT_EQ(VcpuCounts(restored_doc, workload), booted_counts);
    }
  }
  // The IPI way is the snapshot's: a restore takes no other.
  ExpectOneLineError(Sigvisor("run --restore " + TempPath("smp_pv_kvm.snap") + " --ipi xapic"),
                     "with --restore");
  ExpectOneLineError(
      Sigvisor("trace --restore " + TempPath("smp_pv_kvm.snap") + " --workload xcpu_kick"),
      "the step tracer follows vCPU 0 only");

  const std::string matrix =
      " --json --workloads xcpu_pingpong --variants 'smp=on@vcpus=2@ipi=pv' --repetitions 1 "
      "--ops 4";
  const CommandResult booted = Sigvisor("bench" + matrix);
  const CommandResult restored = Sigvisor("bench --restore" + matrix);
  ASSERT_EQ(booted.status, 0) << booted.err;
  ASSERT_EQ(restored.status, 0) << restored.err;
  const json restored_doc = ValidDoc(restored, "sigvisor.bench-1.schema.json");
  EXPECT_TRUE(restored_doc["matrix"]["restored"].get<bool>());
  ExpectSameCells(Parse(booted), restored_doc);
}

// A snapshot edited after it was saved: one flipped byte in either file is refused.
TEST(SnapshotTest, AnEditedSnapshotIsRefused) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("edited.snap");
  ASSERT_FALSE(dir.empty());
  for (const std::string file : {"state", "memory"}) {
    const std::string copy = TempPath("edited_" + file + ".snap");
    std::filesystem::remove_all(copy);
    std::filesystem::copy(dir, copy);
    const std::string path = copy + "/" + file;
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    // The state's byte 40 is inside the first part's table entry; the memory's first
    // written page is where the kernel's image starts (1 MiB).
    const std::streamoff at = file == "state" ? 40 : (1 << 20) + 17;
    f.seekg(at);
    char byte = 0;
    f.read(&byte, 1);
    byte ^= 0x5a;
    f.seekp(at);
    f.write(&byte, 1);
    f.close();
    ExpectOneLineError(Sigvisor("run --quiet --restore " + copy), "snapshot");
  }
}

// What needs no KVM: flags the restored guest cannot honour, files that are no snapshot.
TEST(SnapshotTest, RefusalsBeforeAnyVcpuRuns) {
  const std::string not_a_snapshot = TempPath("not_a_snapshot");
  std::filesystem::create_directories(not_a_snapshot);
  { std::ofstream(not_a_snapshot + "/state") << "hello"; }
  ExpectOneLineError(Sigvisor("run --restore " + not_a_snapshot), "not a snapshot state file");
  ExpectOneLineError(Sigvisor("run --restore " + TempPath("missing.snap")), "missing.snap");
  for (const std::string flag : {"--variant dr7=lazy", "--memory 64", "--cmdline ops=3",
                                 "--inject sig=usr1,op=1", "--gdb 1234", "--image /dev/null"}) {
    ExpectOneLineError(Sigvisor("run --restore " + not_a_snapshot + " " + flag), "with --restore");
  }
  ExpectOneLineError(Sigvisor("snapshot"), "--out");
  ExpectOneLineError(Sigvisor("snapshot --out x --trap=patch"), "restored");
  // Several vCPUs: the SMP build, --trap off, an IPI way and APICs that exist.
  ExpectOneLineError(Sigvisor("snapshot --out x --vcpus 2 --variant baseline"), "uniprocessor");
  ExpectOneLineError(Sigvisor("snapshot --out x --vcpus 2 --trap=pv"),
                     "--trap off with --vcpus > 1");
  ExpectOneLineError(Sigvisor("snapshot --out x --ipi pv"), "a machine of one vCPU");
  ExpectOneLineError(Sigvisor("snapshot --out x --vcpus 2 --lapic qemu"), "--lapic 'qemu'");
  // trace --restore: the same flags refused, and --diff (a second build).
  for (const std::string flag :
       {"--variant dr7=lazy", "--memory 64", "--cmdline ops=3", "--image /dev/null"}) {
    ExpectOneLineError(Sigvisor("trace --restore " + not_a_snapshot + " " + flag),
                       "with --restore");
  }
  ExpectOneLineError(Sigvisor("trace --restore " + not_a_snapshot + " --diff dr7=lazy"),
                     "--diff with --restore");
  ExpectOneLineError(Sigvisor("trace --restore " + not_a_snapshot), "not a snapshot state file");
}

// bench --snapshots DIR and --save-snapshots DIR: what is refused before KVM is opened.
TEST(SnapshotTest, BenchSnapshotRefusalsBeforeAnyVcpuRuns) {
  const std::string missing = TempPath("missing.snaps");
  ExpectOneLineError(Sigvisor("bench --snapshots " + missing),
                     "holds no snapshot of build 'baseline'");
  const std::string damaged = TempPath("damaged.snaps");
  std::filesystem::create_directories(damaged + "/baseline");
  { std::ofstream(damaged + "/baseline/state") << "hello"; }
  ExpectOneLineError(Sigvisor("bench --snapshots " + damaged + " --variants baseline"),
                     "not a snapshot state file");
  // --traps pv restores the debugreg=pv counterpart's, which is not there.
  ExpectOneLineError(Sigvisor("bench --snapshots " + damaged + " --variants baseline --traps pv"),
                     "no snapshot of build 'debugreg=pv'");
  ExpectOneLineError(Sigvisor("bench --snapshots " + damaged + " --restore"), "give one");
  ExpectOneLineError(Sigvisor("bench --snapshots " + damaged + " --save-snapshots x"), "give one");
  ExpectOneLineError(Sigvisor("bench --snapshots " + damaged + " --peer qemu-tcg"), "--peer");
  ExpectOneLineError(Sigvisor("bench --snapshots " + damaged + " --inject sig=usr1,op=1"),
                     "--inject");
  // A Linux build's snapshot is looked for as any build's (tests/linux_snapshot_test.cc
  // saves and restores one), before its kernel is loaded.
  const std::string linux_kernel = TempPath("vmlinuz-placeholder");
  { std::ofstream(linux_kernel) << "a Linux build's snapshot is looked for before it is loaded"; }
  ExpectOneLineError(Sigvisor("bench --snapshots " + damaged + " --variants linux=" + linux_kernel),
                     "holds no snapshot of build 'linux:vmlinuz-placeholder'");
  // --save-snapshots runs nothing: a flag for the runs or their result has no use.
  for (const std::string flag : {"--json", "--workloads divzero", "--ops 4", "--shard 1/2"}) {
    ExpectOneLineError(Sigvisor("bench --save-snapshots x " + flag), "with --save-snapshots");
  }
}

}  // namespace
