// mips_run: boots a MIPS ELF32 image on the interpreter and prints its console, how
// it ended, the counters and the interpreter's speed. For bringing up guests and
// measuring by hand until `sigvisor run --arch mips` does the same.
//   mips_run IMAGE [--cores N] [--mem MIB] [--cmdline TEXT] [--timeout SECONDS]
//              [--engine blocks|reference]
// (--engine reference: the reference interpreter alone, whose counts the block
// engine's must equal.)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cost_model.h"
#include "arch/mips/vmm/mips_machine.h"
#include "vmm/base/capped_file.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: mips_run IMAGE [--cores N] [--mem MIB] [--cmdline TEXT] "
               "[--timeout SECONDS] [--engine blocks|reference]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sigvisor;  // NOLINT
  if (argc < 2) return Usage();
  mips::MipsMachineConfig config;
  int timeout_s = 60;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    int n = 0;
    if (flag == "--cmdline") {
      config.cmdline = value;
    } else if (flag == "--engine") {
      if (value != "blocks" && value != "reference") return Usage();
      config.block_engine = value == "blocks";
    } else if (!absl::SimpleAtoi(value, &n) || n <= 0) {
      return Usage();
    } else if (flag == "--cores") {
      config.cores = n;
    } else if (flag == "--mem") {
      config.memory_bytes = uint64_t(n) << 20;
    } else if (flag == "--timeout") {
      timeout_s = n;
    } else {
      return Usage();
    }
  }
  absl::StatusOr<std::vector<uint8_t>> bytes =
      ReadCappedFileBytes(argv[1], file_caps::kKernelImage, {.noun = "image"});
  if (!bytes.ok()) {
    std::fprintf(stderr, "mips_run: %s\n", std::string(bytes.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<mips::MipsElfImage> image = mips::MipsElfImage::Parse(*std::move(bytes));
  if (!image.ok()) {
    std::fprintf(stderr, "mips_run: %s: %s\n", argv[1],
                 std::string(image.status().message()).c_str());
    return 1;
  }
  config.session.timeout = absl::Seconds(timeout_s);
  config.session.console_sink = [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  absl::StatusOr<mips::MipsMachineReport> report = mips::BootAndRun(*image, config);
  if (!report.ok()) {
    std::fprintf(stderr, "mips_run: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  const RunResult& r = report->result;
  const mips::CoreCounters& t = report->total;
  std::fprintf(stderr, "outcome %s exit %d%s%s\n", std::string(OutcomeName(r.outcome)).c_str(),
               r.exit_code, r.diagnosis.empty() ? "" : ": ", r.diagnosis.c_str());
  std::fprintf(stderr,
               "instructions %llu exceptions %llu tlb_refills %llu tlb_invalid %llu "
               "tlb_modified %llu syscalls %llu interrupts %llu icache_lines_flushed %llu "
               "ipis_sent %llu mmio_exits %llu bus_errors %llu vdso_fetches %llu vdso_writes %llu\n",
               (unsigned long long)t.instructions, (unsigned long long)t.exceptions,
               (unsigned long long)t.tlb_refills, (unsigned long long)t.tlb_invalid,
               (unsigned long long)t.tlb_modified, (unsigned long long)t.syscalls,
               (unsigned long long)t.interrupts, (unsigned long long)t.icache_lines_flushed,
               (unsigned long long)t.ipis_sent, (unsigned long long)t.mmio_exits,
               (unsigned long long)t.bus_errors, (unsigned long long)t.vdso_fetches,
               (unsigned long long)t.vdso_writes);
  std::fprintf(stderr,
               "modelled %llu cycles = %.6f s at %llu MHz (1/instruction, %llu/exception, "
               "%llu/flushed line, %llu/IPI); wall %.6f s; %.1f M guest instructions/s (%.1f M per "
               "CPU second)\n",
               (unsigned long long)t.modelled_cycles(), report->modelled_seconds,
               (unsigned long long)(mips::CostModel::kClockHz / 1000000),
               (unsigned long long)mips::CostModel::kCyclesPerException,
               (unsigned long long)mips::CostModel::kCyclesPerFlushedLine,
               (unsigned long long)mips::CostModel::kCyclesPerIpiSent, r.run_ns / 1e9,
               report->instructions_per_second / 1e6, report->instructions_per_cpu_second / 1e6);
  return r.exit_code;
}
