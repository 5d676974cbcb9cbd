// `--inject SPEC`: what to inject into the guest, when, how often and into whom.
// The grammar is documented in docs/inject.md; this header is its parsed form.
//
//   SPEC    := WHAT "," WHEN { "," OPTION }
//   WHAT    := "exc=" EXC [":" ERRCODE] | "sig=" SIGNAL | "page=" ("np"|"ro"|"evict")
//   WHEN    := "at=" (SYMBOL ["+" OFFSET] | ADDRESS) | "op=" K | "exit=" N | "random"
//   OPTION  := "count=" N | "hit=" K | "phase=" NAME | "task=" PID | "cr2=" ADDRESS
//            | "in=" ("user"|"kernel") | "addr=" ("access"|"stack"|ADDRESS)
//
// Parsing checks only the spec itself; whether a symbol exists in the image, or a
// phase in the run, is checked against the guest when the run starts.
#ifndef SIGVISOR_VMM_INJECT_INJECTION_SPEC_H_
#define SIGVISOR_VMM_INJECT_INJECTION_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace sigvisor {

enum class InjectWhat {
  kException,  // an exception by vector through KVM_SET_VCPU_EVENTS
  kSignal,     // a signal sent to a guest task from the host (kill from outside)
  kPage,       // a user page made not present / read-only / evicted
};

enum class PageMode {
  kNotPresent,  // "np": as if unmapped: the next access faults, nothing repairs it
  kReadOnly,    // "ro": writes fault (reads still work)
  kEvicted,     // "evict": not present but marked evicted: the guest pages it back in
};

enum class PageTarget {
  kAccess,   // the page the instruction at the trigger accesses (an `at=` trigger)
  kStack,    // the page just below the interrupted user stack pointer (a frame's page)
  kAddress,  // page_address
};

enum class InjectWhen {
  kAt,      // the guest kernel reaches symbol+offset or an address (its hit-th time)
  kOp,      // the K-th operation of a phase (its per-op system call, K-th entry)
  kExit,    // the N-th VM exit of the run
  kRandom,  // `count` operations of a phase drawn from --seed
};

// Where an exception is raised: in the user task (at its next instruction in user
// mode) or in the kernel (at the trigger point).
enum class ExceptionMode { kUser, kKernel };

struct InjectionSpec {
  std::string text;  // the spec as given, for reports

  InjectWhat what = InjectWhat::kException;
  // kException
  uint8_t vector = 0;
  std::optional<uint32_t> error_code;  // required for vectors that push one
  std::optional<uint64_t> cr2;         // #PF only (unset: CR2 = 0)
  ExceptionMode mode = ExceptionMode::kUser;
  // kSignal
  int signo = 0;
  // kPage
  PageMode page_mode = PageMode::kNotPresent;
  PageTarget page_target = PageTarget::kStack;
  uint64_t page_address = 0;

  InjectWhen when = InjectWhen::kOp;
  std::string symbol;          // kAt: a symbol name, or empty for `address`
  uint64_t symbol_offset = 0;  // kAt with a symbol: +OFFSET
  uint64_t address = 0;        // kAt without a symbol
  uint64_t hit = 1;            // kAt: the first hit that injects (1 = the first)
  uint64_t op = 0;             // kOp: K (1-based)
  uint64_t exit_index = 0;     // kExit: N (1-based)
  std::string phase;           // kOp/kRandom: the phase ("" = the first measured one)

  uint64_t count = 1;  // how many injections this spec makes (consecutive hits/ops/exits)
  int task = 0;        // the guest pid a signal goes to (0 = the task that is running)

  friend bool operator==(const InjectionSpec&, const InjectionSpec&) = default;
};

// Parses one --inject value. Errors are one line naming the part that is wrong, e.g.
// "--inject 'exc=de,op=0': op=0: operations are numbered from 1".
absl::StatusOr<InjectionSpec> ParseInjectionSpec(std::string_view text);

// The exception vector for a name ("de", "db", "bp", "of", "br", "ud", "nm", "df",
// "ts", "np", "ss", "gp", "pf", "mf", "ac", "mc", "xm") or a number 0-31.
std::optional<uint8_t> ExceptionVectorByName(std::string_view name);
// Whether the CPU pushes an error code for this vector (#DF #TS #NP #SS #GP #PF #AC).
bool ExceptionHasErrorCode(uint8_t vector);
// Short name for reports ("de", ... or the number).
std::string ExceptionName(uint8_t vector);

// Whether `--inject exc=` accepts this vector (the named ones: not NMI, 9, 15, 20-31).
bool ExceptionInjectable(uint8_t vector);

// The spec back in canonical form: WHAT, WHEN, then hit, phase, count, task, cr2, in,
// addr; defaults left out; names rather than numbers; addresses in 0x-hex. Parsing the
// result gives the same spec (except `text`).
std::string FormatInjectionSpec(const InjectionSpec& spec);

// A signal by Linux x86-64 number (1-64) or name ("usr1", "SIGUSR1", "segv", ...).
std::optional<int> SignalByName(std::string_view name);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_INJECT_INJECTION_SPEC_H_
