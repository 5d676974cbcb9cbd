// The trace's pieces without KVM: the DWARF inline reader on the bundled kernel and
// on bad input, the analysis of a scripted trace (ops, counts against the ledger,
// profile, stages), its text and JSON, and the side-by-side comparison; and that
// degenerate step streams (no ops to cut, odd bytes, absurd counts) never abort.
#include <gtest/gtest.h>

#include <algorithm>

#include "vmm/app/images/embedded_images.h"
#include "vmm/trace/analysis.h"
#include "vmm/trace/format.h"
#include "vmm/trace/inline_info.h"
#include "vmm/trace/linux_stages.h"
#include "vmm/trace/op_counts.h"
#include "vmm/trace/stages.h"

namespace sigvisor::trace {
namespace {

ElfImage Kernel(std::string_view variant) {
  absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant);
  EXPECT_TRUE(build.ok());
  absl::StatusOr<ElfImage> image = ParseKernel(**build);
  EXPECT_TRUE(image.ok());
  return *std::move(image);
}

const InlineInfo::Range* FindRange(const InlineInfo& info, std::string_view name) {
  for (const InlineInfo::Range& r : info.ranges()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(InlineInfoTest, ReadsTheKernelsInlinedSignalPath) {
  const ElfImage kernel = Kernel("baseline");
  const InlineInfo info = InlineInfo::FromElf(kernel.bytes());
  ASSERT_FALSE(info.empty());
  // handle_signal, setup_rt_frame and setup_sigcontext live inside exit_to_user_mode.
  const InlineInfo::Range* sigcontext = FindRange(info, "setup_sigcontext");
  ASSERT_NE(sigcontext, nullptr);
  const std::vector<std::string> chain = info.InlinedAt(sigcontext->begin);
  ASSERT_GE(chain.size(), 3u);
  EXPECT_EQ(chain[chain.size() - 3], "handle_signal");
  EXPECT_EQ(chain[chain.size() - 2], "setup_rt_frame");
  EXPECT_EQ(chain.back(), "setup_sigcontext");
  // The DR7 write of the baseline is set_debugreg7, inlined.
  EXPECT_NE(FindRange(info, "set_debugreg7"), nullptr);
  // Outside any inlined range: nothing.
  EXPECT_TRUE(info.InlinedAt(0).empty());
}

TEST(InlineInfoTest, BadInputIsEmptyNotACrash) {
  EXPECT_TRUE(InlineInfo::FromElf({}).empty());
  const std::vector<uint8_t> junk(4096, 0xff);
  EXPECT_TRUE(InlineInfo::FromElf(junk).empty());
  // Every truncation of a real image: no crash, and no more ranges than the whole.
  const ElfImage kernel = Kernel("baseline");
  const auto bytes = kernel.bytes();
  const size_t whole = InlineInfo::FromElf(bytes).size();
  for (size_t cut : {size_t{64}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 100}) {
    EXPECT_LE(InlineInfo::FromElf(bytes.first(cut)).size(), whole);
  }
  // Corrupted DWARF bytes: still no crash.
  std::vector<uint8_t> corrupt(bytes.begin(), bytes.end());
  for (size_t i = corrupt.size() / 2; i < corrupt.size(); i += 97) corrupt[i] ^= 0x5a;
  (void)InlineInfo::FromElf(corrupt);
}

// ---- a scripted trace ----------------------------------------------------------------

Entry Insn(uint64_t address, std::string function, std::vector<std::string> callers = {},
           std::vector<std::string> inlined = {}, std::string text = "nop") {
  Entry e;
  e.address = address;
  e.function = function;
  e.symbol = function;
  e.callers = std::move(callers);
  e.inlined = std::move(inlined);
  e.text = std::move(text);
  e.bytes = {0x90};
  return e;
}

Entry Opaque(std::string via, uint64_t emulated) {
  Entry e;
  e.kind = Entry::Kind::kOpaque;
  e.cpl = 3;
  e.address = 0x40000000;
  e.exit_address = 0x40000010;
  e.exit_via = std::move(via);
  e.host_emulated = emulated;
  return e;
}

// A complete trace of one divzero op, its entries to come.
Trace OneDivzeroOp(std::string host_kind) {
  Trace t;
  t.phase = "divzero";
  t.ops = 1;
  t.complete = true;
  t.host_kind = std::move(host_kind);
  return t;
}

// One divzero-shaped op between the markers' kernel spans.
Trace DivzeroShaped(bool dr7) {
  Trace t = OneDivzeroOp("pvm");
  t.trap = TrapMechanism::kOff;
  t.opaque_reason = "CPL3 is not stepped here";
  t.entries.push_back(Insn(0x100, "x86_return_from_trap"));  // BEGIN returning
  t.entries.push_back(Insn(0x101, "x86_return_from_trap", {}, {}, "iretq"));
  t.entries.push_back(Opaque("#DE", 0));                    // the op: user code, #DE
  t.entries.push_back(Insn(0x200, "x86_vector_stubs"));
  t.entries.push_back(Insn(0x210, "force_sig_fault", {"trap_common", "x86_trap", "user_exception"}));
  t.entries.push_back(Insn(0x300, "exit_to_user_mode", {"trap_common"}));
  t.entries.push_back(Insn(0x310, "get_signal", {"trap_common", "exit_to_user_mode"}));
  Entry rep = Insn(0x320, "memcpy", {"trap_common", "exit_to_user_mode", "get_signal"}, {},
                   "rep movsb (%rsi), (%rdi)");
  rep.passes = 2;
  t.entries.push_back(rep);
  if (dr7) {
    Entry write = Insn(0x330, "exit_to_user_mode", {"trap_common"}, {"set_debugreg7"},
                       "movq %rax, %dr7");
    write.debug_register_write = write.debug_control_write = true;
    t.entries.push_back(write);
  }
  t.entries.push_back(Insn(0x340, "exit_to_user_mode", {"trap_common"},
                           {"handle_signal", "setup_rt_frame", "setup_sigcontext"}));
  t.entries.push_back(Insn(0x350, "x86_return_from_trap", {}, {}, "iretq"));
  t.entries.push_back(Opaque("#UD: int $0x80 (rt_sigreturn)", 1));  // handler, sigreturn
  t.entries.push_back(Insn(0x210, "trap_common"));
  t.entries.push_back(Insn(0x400, "sys_rt_sigreturn", {"trap_common", "x86_trap", "syscall_dispatch"}));
  t.entries.push_back(Insn(0x300, "exit_to_user_mode", {"trap_common"}));
  t.entries.push_back(Insn(0x350, "x86_return_from_trap", {}, {}, "iretq"));
  t.entries.push_back(Opaque("#UD: int $0x80 (phase_end)", 1));  // to END
  t.entries.push_back(Insn(0x210, "trap_common"));
  t.entries.push_back(Insn(0x500, "hc_phase_end", {}, {}, "outl %eax, %dx"));
  return t;
}

TEST(AnalysisTest, CutsOpsAndCountsAsKvmDoes) {
  Trace t = DivzeroShaped(true);
  // The op: 8 kernel instructions of the #DE span and the rep's second pass, the
  // int $0x80 the host decoded, 4 of the sigreturn span. Markers: 2 + 1 + 2.
  t.ledger_kernel_insns = 14;
  t.ledger_marker_kernel_insns = 5;
  const Analysis a = Analyze(t);
  ASSERT_EQ(a.ops.size(), 1u) << a.ops_note;
  EXPECT_EQ(a.ops[0].kernel_insns, 14u);
  EXPECT_EQ(a.ops[0].distinct, 12u);
  EXPECT_EQ(a.marker_kernel_insns, 5u);
  EXPECT_EQ(a.phase_kernel_insns, 19u);
  ASSERT_TRUE(a.matches_ledger.has_value());
  EXPECT_TRUE(*a.matches_ledger);

  t.ledger_kernel_insns = 15;
  EXPECT_FALSE(*Analyze(t).matches_ledger);
}

TEST(AnalysisTest, ProfileAndStages) {
  const Analysis a = Analyze(DivzeroShaped(true));
  auto row = [&](const std::string& name) -> const FunctionRow* {
    for (const FunctionRow& r : a.profile) {
      if (r.function == name) return &r;
    }
    return nullptr;
  };
  ASSERT_NE(row("get_signal"), nullptr);
  EXPECT_EQ(row("get_signal")->self, 1u);
  EXPECT_EQ(row("get_signal")->inclusive, 3u);  // with the rep's two passes
  ASSERT_NE(row("setup_sigcontext"), nullptr);
  EXPECT_EQ(row("trap_common")->inclusive, 10u);

  std::vector<std::string> names;
  uint64_t total = 0;
  for (const StageRow& s : a.stages) {
    names.push_back(s.stage);
    total += s.kernel_insns;
  }
  EXPECT_EQ(total, 14u);
  const std::vector<std::string> expected = {
      "user code (CPL3, opaque)", "exception entry", "signal generation", "dequeue",
      "DR7 write", "frame setup", "return to the handler", "handler (CPL3, opaque)",
      "sigreturn entry", "sys_rt_sigreturn", "sigreturn exit"};
  EXPECT_EQ(names, expected);
}

// One Linux divzero op, shaped as Debian 6.1's trace on the hardware lane: the #DE
// through the die notifiers to force_sig_fault (with a ucounts charge), the delivery
// (dequeue, the frame and its FPU part, the exit-to-user work), the handler, and
// sigreturn by SYSCALL. Each step has `n` instructions.
Trace LinuxDivzeroShaped() {
  Trace t = OneDivzeroOp("hardware");
  t.kernel = Kernel::kLinux;
  auto add = [&](std::string function, std::vector<std::string> callers, int n,
                 std::string text = "nop") {
    for (int i = 0; i < n; ++i) t.entries.push_back(Insn(0x1000, function, callers, {}, text));
  };
  t.entries.push_back(Opaque("#DE", 0));  // from the BEGIN marker: user code, its #DE
  const std::vector<std::string> de = {"asm_exc_divide_error"};
  const std::vector<std::string> trap = {"asm_exc_divide_error", "exc_divide_error",
                                         "do_error_trap"};
  add("asm_exc_divide_error", {}, 2);
  add("error_entry", de, 3);
  add("sync_regs", {"asm_exc_divide_error", "error_entry"}, 1, "rep movsq (%rsi), (%rdi)");
  add("exc_divide_error", de, 4);
  add("notify_die", trap, 5);
  add("__rcu_read_lock",
      {"asm_exc_divide_error", "exc_divide_error", "do_error_trap", "notify_die"}, 1);
  add("force_sig_fault", trap, 6);
  const std::vector<std::string> send = {
      "asm_exc_divide_error", "exc_divide_error",     "do_error_trap",   "force_sig_fault",
      "send_signal_locked",   "__send_signal_locked", "__sigqueue_alloc"};
  add("inc_rlimit_get_ucounts", send, 7);
  add("kmem_cache_alloc", send, 8);
  add("irqentry_exit", de, 1);
  const std::vector<std::string> out = {"asm_exc_divide_error", "irqentry_exit_to_user_mode"};
  add("exit_to_user_mode_prepare", out, 2);
  std::vector<std::string> deliver = out;
  deliver.push_back("exit_to_user_mode_prepare");
  add("arch_do_signal_or_restart", deliver, 3);
  deliver.push_back("arch_do_signal_or_restart");
  add("get_signal", deliver, 9);
  std::vector<std::string> dequeue = deliver;
  dequeue.push_back("get_signal");
  add("put_ucounts", dequeue, 2);
  add("get_sigframe.constprop.0.isra.0", deliver, 4);
  add("copy_fpstate_to_sigframe", deliver, 5);
  add("copy_siginfo_to_user", deliver, 3);
  add("native_tss_update_io_bitmap",
      {"asm_exc_divide_error", "irqentry_exit_to_user_mode", "exit_to_user_mode_prepare"}, 2);
  add("irqentry_exit_to_user_mode", de, 1, "retq");
  add("asm_exc_divide_error", {}, 1, "jmp error_return");
  add("__irqentry_text_end", {}, 2);
  add("native_irq_return_iret", {}, 1, "iretq");
  t.entries.push_back(Opaque("syscall (rt_sigreturn)", 0));  // the handler
  add("entry_SYSCALL_64", {}, 3);
  const std::vector<std::string> sys = {"entry_SYSCALL_64_after_hwframe", "do_syscall_64"};
  add("__ia32_sys_rt_sigreturn", sys, 6);
  add("fpu__restore_sig",
      {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__ia32_sys_rt_sigreturn",
       "restore_sigcontext"},
      4);
  add("syscall_exit_to_user_mode", sys, 2);
  add("entry_SYSCALL_64_after_hwframe", {}, 1);  // after the call: on the way out
  add("native_irq_return_iret", {}, 1, "iretq");
  t.entries.push_back(Opaque("the END marker", 0));
  return t;
}

TEST(LinuxStagesTest, TheTableNamesLinuxsSignalPath) {
  EXPECT_EQ(LinuxStageRuleFor("asm_exc_divide_error")->stage, kEntryPath);
  EXPECT_EQ(LinuxStageRuleFor("exc_divide_error")->stage, stage::kSignalGeneration);
  EXPECT_EQ(LinuxStageRuleFor("irqentry_exit_to_user_mode")->stage, kExitPath);
  EXPECT_EQ(LinuxStageRuleFor("exit_to_user_mode_prepare")->stage, stage::kExitToUserWork);
  EXPECT_EQ(LinuxStageRuleFor("get_sigframe.constprop.0.isra.0")->stage, stage::kFrameSetup);
  EXPECT_EQ(LinuxStageRuleFor("apparmor_task_kill")->stage, stage::kLsmHook);
  EXPECT_EQ(LinuxStageRuleFor("kmem_cache_alloc"), nullptr);  // counts with its caller
  // Every stage the table names is one of the list the diff orders by.
  for (const LinuxStageRule& rule : LinuxStageTable()) {
    if (rule.stage == kEntryPath || rule.stage == kExitPath) continue;
    EXPECT_LT(stage::Rank(rule.stage), std::size(stage::kOrder)) << rule.function;
  }
}

TEST(LinuxStagesTest, CutsALinuxOpIntoTheModelsStagesAndLinuxsOwn) {
  const Analysis a = Analyze(LinuxDivzeroShaped());
  ASSERT_EQ(a.ops.size(), 1u) << a.ops_note;
  std::vector<std::pair<std::string, uint64_t>> rows;
  uint64_t total = 0;
  for (const StageRow& s : a.stages) {
    rows.emplace_back(s.stage, s.kernel_insns);
    total += s.kernel_insns;
  }
  const std::vector<std::pair<std::string, uint64_t>> expected = {
      {"user code (CPL3, opaque)", 0},
      {"exception entry", 2 + 3 + 1},    // asm_exc_divide_error, error_entry, sync_regs
      {"signal generation", 4 + 6 + 8},  // exc_divide_error, force_sig_fault, the slab
      {"die notifiers", 6},
      {"ucounts", 7 + 2},
      // irqentry_exit*, asm_exc_divide_error's jmp, the iretq's path
      {"return to the handler", 1 + 1 + 1 + 2 + 1},
      {"exit-to-user work", 2 + 2},
      {"frame setup", 3 + 4 + 3},
      {"dequeue", 9},
      {"FPU frame", 5},
      {"handler (CPL3, opaque)", 0},
      {"sigreturn entry", 3},
      {"sys_rt_sigreturn", 6},
      {"FPU frame restore", 4},
      {"sigreturn exit", 2 + 1 + 1},
  };
  EXPECT_EQ(rows, expected);
  EXPECT_EQ(total, a.ops[0].kernel_insns);
}

TEST(LinuxStagesTest, DiffOfTheModelAndLinuxIsByStage) {
  const Trace model = DivzeroShaped(true), linux_trace = LinuxDivzeroShaped();
  const TraceDiff d = DiffTraces({"kernel", "baseline", ""}, model, Analyze(model),
                                 {"vmlinuz", "", ""}, linux_trace, Analyze(linux_trace));
  EXPECT_EQ(d.json["left"]["kernel"], "sigvisor");
  EXPECT_EQ(d.json["right"]["kernel"], "linux");
  EXPECT_TRUE(d.json["instructions"].is_null());
  EXPECT_TRUE(d.json["functions"].empty());
  std::vector<std::string> order;
  for (const auto& row : d.json["stages"]) order.push_back(row["stage"]);
  // The order a signal passes them: Linux's own stages between the model's.
  const std::vector<std::string> expected = {"user code (CPL3, opaque)",
                                             "exception entry",
                                             "die notifiers",
                                             "signal generation",
                                             "ucounts",
                                             "dequeue",
                                             "DR7 write",
                                             "frame setup",
                                             "FPU frame",
                                             "exit-to-user work",
                                             "return to the handler",
                                             "handler (CPL3, opaque)",
                                             "sigreturn entry",
                                             "sys_rt_sigreturn",
                                             "FPU frame restore",
                                             "sigreturn exit"};
  EXPECT_EQ(order, expected) << d.text;
  for (const auto& row : d.json["stages"]) {
    if (row["stage"] == "DR7 write") {
      EXPECT_EQ(row["left"], 1);
      EXPECT_EQ(row["right"], 0);  // Linux 6.1 writes no DR7 on delivery
    }
  }
  EXPECT_NE(d.text.find("compared by stage only"), std::string::npos) << d.text;
}

TEST(OpCountsTest, CountsTheSeedsTermsInOneOp) {
  Trace t = LinuxDivzeroShaped();
  auto at = [&](std::string_view function) {
    return std::find_if(t.entries.begin(), t.entries.end(),
                        [&](const Entry& e) { return e.function == function; });
  };
  // Seed 001: %gs-prefixed instructions (after a lock prefix too, but not after REX).
  at("force_sig_fault")->bytes = {0x65, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00};
  std::next(at("force_sig_fault"))->bytes = {0xf0, 0x65, 0xff, 0x05, 0, 0, 0, 0};
  std::next(at("force_sig_fault"), 2)->bytes = {0x48, 0x8b, 0x04, 0x25, 0x65, 0, 0, 0};
  at("entry_SYSCALL_64")->text = "swapgs";
  // Seed 003: dequeue's stores (the stack's are not counted).
  const std::vector<std::string> in_get_signal = {
      "asm_exc_divide_error", "irqentry_exit_to_user_mode", "exit_to_user_mode_prepare",
      "arch_do_signal_or_restart", "get_signal"};
  std::vector<Entry> stores;
  for (const char* text : {"movq %rdx, (%rbp)", "movq %rdx, 8(%rbp)", "movq %rdx, 0x10(%rbp)",
                           "movq %rax, 8(%rsp)", "movl $1, (%rcx)"}) {
    stores.push_back(Insn(0x2000, "collect_signal", in_get_signal, {}, text));
  }
  t.entries.insert(std::next(at("get_signal")), stores.begin(), stores.end());
  // Seed 002: a user-copy call in the frame set-up, and the routine's own call below it.
  std::vector<std::string> in_copy = {"asm_exc_divide_error", "irqentry_exit_to_user_mode",
                                      "exit_to_user_mode_prepare", "arch_do_signal_or_restart",
                                      "copy_siginfo_to_user"};
  auto copy = at("copy_siginfo_to_user");
  copy->text = "callq 0x1000";
  std::vector<Entry> calls = {Insn(0x3000, "_copy_to_user", in_copy, {}, "callq 0x1000")};
  in_copy.push_back("_copy_to_user");
  calls.push_back(Insn(0x3100, "copy_user_enhanced_fast_string", in_copy, {}, "stac"));
  t.entries.insert(std::next(copy), calls.begin(), calls.end());
  // Seed 000: a DR7 write.
  Entry dr7 = Insn(0x4000, "native_set_debugreg", {"asm_exc_divide_error"}, {}, "movq %rax, %dr7");
  dr7.debug_register_write = dr7.debug_control_write = true;
  t.entries.insert(std::next(at("error_entry")), dr7);

  const Analysis a = Analyze(t);
  ASSERT_EQ(a.ops.size(), 1u) << a.ops_note;
  const std::optional<OpCounts> c = CountOp(t, a);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kernel_insns, a.ops[0].kernel_insns);
  EXPECT_EQ(c->gs_prefixed, 2u);
  EXPECT_EQ(c->swapgs, 1u);
  EXPECT_EQ(c->dr7_writes, 1u);
  EXPECT_EQ(c->dr_writes, 1u);
  EXPECT_EQ(c->stage_insns.at("DR7 write"), 1u);
  EXPECT_EQ(c->stage_insns.at("dequeue"), 9u + 5u);
  EXPECT_EQ(c->dequeue_bytes_stored, 3u * 8 + 4);
  EXPECT_EQ(c->dequeue_largest_block, 24u);
  EXPECT_EQ(c->user_copy_calls_in_frame_setup, 1u);
  EXPECT_EQ(c->user_access_windows, 1u);
  EXPECT_TRUE(c->frame_setup_functions.count("copy_fpstate_to_sigframe"));
  EXPECT_TRUE(c->frame_setup_functions.count("_copy_to_user"));
  EXPECT_FALSE(CountOp(t, a, 1).has_value());
}

TEST(AnalysisTest, UnevenPhasesAreNotCut) {
  Trace t = DivzeroShaped(true);
  t.ops = 3;  // two (user, kernel) pairs between the markers: not three ops
  const Analysis a = Analyze(t);
  EXPECT_TRUE(a.ops.empty());
  EXPECT_NE(a.ops_note.find("do not split evenly"), std::string::npos);
  t.ops = 1;
  t.complete = false;
  EXPECT_TRUE(Analyze(t).ops.empty());
}

// ---- degenerate step streams: never an abort, ops not cut, a note saying why ---------

// Every formatter over `t` and its analysis, as `sigvisor trace` runs them (the JSON
// dumped: nlohmann throws on what is not UTF-8).
void FormatEverything(const Trace& t, const Analysis& a) {
  const TraceSource source{"kernel baseline (embedded)", "baseline", "workload=divzero"};
  (void)FormatListing(t, a);
  (void)FormatSummary(source, t, a);
  (void)TraceToJson(source, t, a).dump(2);
  const Trace reference = DivzeroShaped(true);
  const Analysis reference_analysis = Analyze(reference);
  (void)DiffTraces(source, t, a, source, reference, reference_analysis).json.dump(2);
  (void)DiffTraces(source, reference, reference_analysis, source, t, a).json.dump(2);
  (void)DiffTraces(source, t, a, source, t, a).json.dump(2);
}

// The hardware-KVM divzero trace that lost the kernel's signal path: the BEGIN
// marker's kernel span, then a single (user, kernel) pair, the END marker's.
Trace OnlyTheEndMarkersPair(uint64_t ops) {
  Trace t;
  t.phase = "divzero";
  t.ops = ops;
  t.complete = true;
  t.host_kind = "hardware";
  t.entries.push_back(Insn(0x100, "x86_return_from_trap", {}, {}, "iretq"));
  t.entries.push_back(Opaque("#UD: int $0x80 (phase_end)", 1));
  t.entries.push_back(Insn(0x210, "trap_common"));
  t.entries.push_back(Insn(0x500, "hc_phase_end", {}, {}, "outl %eax, %dx"));
  t.ledger_kernel_insns = 900;
  return t;
}

TEST(AnalysisTest, OnePairIsNotCutIntoOps) {
  for (uint64_t ops : {uint64_t{1}, uint64_t{2}, UINT64_MAX}) {
    SCOPED_TRACE(ops);
    const Trace t = OnlyTheEndMarkersPair(ops);
    const Analysis a = Analyze(t);
    EXPECT_TRUE(a.ops.empty());
    EXPECT_NE(a.ops_note.find("END marker"), std::string::npos) << a.ops_note;
    EXPECT_TRUE(a.stages.empty());
    EXPECT_FALSE(a.matches_ledger.has_value());
    // The profile is then the whole phase's: 4 kernel instructions, the int $0x80 one.
    uint64_t self = 0;
    for (const FunctionRow& row : a.profile) self += row.self;
    EXPECT_EQ(self, 4u);
    EXPECT_EQ(a.phase_kernel_insns, 4u);
    FormatEverything(t, a);
    const std::string listing = FormatListing(t, a);
    EXPECT_NE(listing.find("not cut into ops"), std::string::npos) << listing;
  }
}

TEST(AnalysisTest, UserCodeAloneIsNotCutIntoOps) {
  Trace t = OnlyTheEndMarkersPair(1);
  t.entries = {Opaque("#DE", 0), Opaque("#UD: int $0x80 (phase_end)", 1)};
  const Analysis a = Analyze(t);
  EXPECT_TRUE(a.ops.empty());
  EXPECT_FALSE(a.ops_note.empty());
  EXPECT_EQ(a.first_span_end, 0u);
  EXPECT_EQ(a.marker_kernel_insns, 1u);
  FormatEverything(t, a);
}

TEST(AnalysisTest, EmptyAndKernelOnlyTracesSayWhy) {
  Trace t = OnlyTheEndMarkersPair(1);
  t.entries.clear();
  Analysis a = Analyze(t);
  EXPECT_TRUE(a.ops.empty());
  EXPECT_EQ(a.ops_note, "the trace holds no instructions");
  EXPECT_EQ(a.phase_kernel_insns, 0u);
  FormatEverything(t, a);

  t.entries = {Insn(0x100, "x86_return_from_trap"), Insn(0x500, "hc_phase_end")};
  a = Analyze(t);
  EXPECT_TRUE(a.ops.empty());
  EXPECT_NE(a.ops_note.find("never leaves the kernel"), std::string::npos) << a.ops_note;
  EXPECT_EQ(a.marker_kernel_insns, 2u);
  FormatEverything(t, a);
}

TEST(AnalysisTest, ClassifyStagesClipsItsRangeToTheTrace) {
  const Trace t = DivzeroShaped(true);
  const size_t n = t.entries.size();
  std::vector<StageRow> rows;
  EXPECT_TRUE(ClassifyStages(t, 5, 2, &rows).empty());  // reversed: nothing
  EXPECT_TRUE(rows.empty());
  EXPECT_EQ(ClassifyStages(t, 2, n + 1000, &rows).size(), n - 2);
  EXPECT_TRUE(ClassifyStages(t, n + 5, n + 10, &rows).empty());
}

TEST(AnalysisTest, CountsSaturateInsteadOfWrapping) {
  Trace t = DivzeroShaped(true);
  t.entries[2].host_emulated = UINT64_MAX;  // the op's user code, by an absurd host
  const Analysis a = Analyze(t);
  ASSERT_EQ(a.ops.size(), 1u) << a.ops_note;
  EXPECT_EQ(a.ops[0].kernel_insns, UINT64_MAX);
  EXPECT_EQ(a.phase_kernel_insns, UINT64_MAX);
  FormatEverything(t, a);
}

TEST(FormatTest, JsonOfNonUtf8NamesStillDumps) {
  Trace t = DivzeroShaped(true);
  t.entries[4].function = "force\xff_sig\xc3";  // a symbol table of random bytes
  t.entries[4].text = "\xed\xa0\x80";          // a UTF-16 surrogate: not UTF-8 either
  t.entries[2].exit_via = "#DE \xf4\x90\x80\x80";
  const Analysis a = Analyze(t);
  const TraceSource source{"kernel \xfe", "baseline", "workload=divzero"};
  const std::string dumped = TraceToJson(source, t, a).dump();
  EXPECT_NE(dumped.find("force\xef\xbf\xbd_sig\xef\xbf\xbd"), std::string::npos) << dumped;
  FormatEverything(t, a);
  // Valid UTF-8 is kept as it is.
  t.entries[4].function = "caf\xc3\xa9";
  EXPECT_NE(TraceToJson(source, t, Analyze(t)).dump().find("caf\xc3\xa9"), std::string::npos);
}

TEST(FormatTest, LongAddressesAlignWithoutRecursion) {
  // The alignment key replaces addresses; a disassembly of any length must not
  // exhaust the stack (std::regex recursed once per character).
  Trace with = DivzeroShaped(true), without = DivzeroShaped(false);
  with.entries[4].text = "mov 0x" + std::string(200000, 'f') + ", %rax";
  without.entries[4].text = "mov 0x" + std::string(100, 'a') + ", %rax";
  const TraceDiff d = DiffTraces({"a", "dr7=always", ""}, with, Analyze(with),
                                 {"b", "dr7=lazy", ""}, without, Analyze(without));
  // The two moves differ only by their address: aligned, so only the DR7 write differs.
  EXPECT_EQ(d.json["instructions"]["left_only"].size(), 1u) << d.text.substr(0, 2000);
}

TEST(FormatTest, ListingSummaryAndJson) {
  Trace t = DivzeroShaped(true);
  t.ledger_kernel_insns = 14;
  t.ledger_marker_kernel_insns = 5;
  const Analysis a = Analyze(t);
  const std::string listing = FormatListing(t, a);
  EXPECT_NE(listing.find("== op 1: 14 kernel instructions =="), std::string::npos) << listing;
  EXPECT_NE(listing.find("left by #DE: not single-stepped"), std::string::npos) << listing;
  EXPECT_NE(listing.find("2 passes"), std::string::npos) << listing;
  const TraceSource source{"kernel baseline (embedded)", "baseline", "workload=divzero ops=1"};
  const std::string summary = FormatSummary(source, t, a);
  EXPECT_NE(summary.find("the trace matches the ledger"), std::string::npos) << summary;
  EXPECT_NE(summary.find("DR7 write"), std::string::npos) << summary;
  EXPECT_NE(summary.find("host pvm, trap mechanism off\n"), std::string::npos) << summary;
  const nlohmann::ordered_json j = TraceToJson(source, t, a);
  EXPECT_EQ(j["schema"], "sigvisor.trace/1");
  EXPECT_EQ(j["trap_mechanism"], "off");
  EXPECT_EQ(j["counts"]["per_op"][0], 14);
  EXPECT_EQ(j["counts"]["matches_ledger"], true);
  EXPECT_EQ(j["entries"].size(), t.entries.size());
  EXPECT_EQ(j["entries"][0]["op"], nullptr);
  EXPECT_EQ(j["entries"][2]["kind"], "opaque");
  EXPECT_EQ(j["entries"][3]["stage"], "exception entry");
}

// Issue 30: a trace that timed out inside its phase blamed the host ("does not count
// kernel instructions") on a host that does; it says the run timed out and to raise
// --timeout. The host is named only where it is the reason.
TEST(FormatTest, NoLedgerCountSaysWhyTimeoutFirst) {
  Trace t = DivzeroShaped(true);
  t.complete = false;
  t.stopped_why = "the run ended (timeout) inside the phase";
  t.run_outcome = "timeout";
  t.run_timeout = "1m";
  EXPECT_EQ(NoLedgerCheckReason(t),
            "the run timed out at --timeout 1m before the phase ended: single-stepping is slow; "
            "raise --timeout");
  const TraceSource source{"kernel baseline (embedded)", "baseline", "workload=divzero ops=1"};
  const std::string summary = FormatSummary(source, t, Analyze(t));
  EXPECT_NE(summary.find("no ledger count to check against (the run timed out at --timeout 1m"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("does not count kernel instructions"), std::string::npos) << summary;
  // A timeout on a host that does not count: the timeout is still the reason given.
  t.host_kind = "hardware";
  EXPECT_NE(NoLedgerCheckReason(t).find("timed out"), std::string::npos);
  // The run ended otherwise: on this host, the host.
  t.run_outcome = "exited";
  t.complete = true;
  EXPECT_EQ(NoLedgerCheckReason(t), "this host does not count kernel instructions");
  // On a host that counts: what ended the run first.
  t.host_kind = "pvm";
  t.run_outcome = "guest_panic";
  EXPECT_EQ(NoLedgerCheckReason(t), "the run ended (guest_panic) before the phase did");
  t.run_outcome = "";
  EXPECT_EQ(NoLedgerCheckReason(t), "the run's ledger has no count for the phase");
}

TEST(FormatTest, DiffShowsTheDr7WriteOnlyOnItsSide) {
  const Trace with = DivzeroShaped(true), without = DivzeroShaped(false);
  const TraceDiff d = DiffTraces({"a", "dr7=always", ""}, with, Analyze(with),
                                 {"b", "dr7=lazy", ""}, without, Analyze(without));
  ASSERT_EQ(d.json["instructions"]["left_only"].size(), 1u) << d.text;
  EXPECT_EQ(d.json["instructions"]["left_only"][0]["debug_control_write"], true);
  EXPECT_EQ(d.json["instructions"]["right_only"].size(), 0u);
  EXPECT_NE(d.text.find("< "), std::string::npos) << d.text;
  EXPECT_NE(d.text.find("movq %rax, %dr7"), std::string::npos) << d.text;
}

}  // namespace
}  // namespace sigvisor::trace
