#include <algorithm>
#include <cstdio>

#include "absl/flags/reflection.h"
#include "absl/strings/str_format.h"
#include "vmm/cli/command.h"

namespace sigvisor::cli {

std::span<const Command> Commands() {
  static const Command kCommands[] = {
      {"run", "boot a guest, stream its console, report its VM exits",
       "Boots a guest (by default the bundled kernel) in a fresh KVM VM and streams its\n"
       "console. At the end it prints the outcome, the exit table (per reason: count,\n"
       "mean and max VMM handling time), KVM's own statistics and one block per phase the\n"
       "guest measured (BEGIN/END markers), per operation. Exits with the guest's exit\n"
       "status; 1 when the guest failed (triple fault, panic, timeout, ...) with a one-line\n"
       "diagnosis on stderr; 2 when the run could not start.\n"
       "\nWith --trap, the guest's debug-register accesses and segment-register loads\n"
       "trap to the VMM, which emulates them (DR7 lazily) and counts them by kind and\n"
       "site, per phase and per op. auto picks patch (see README.md, \"Traps\").\n"
       "\nExamples:\n"
       "  sigvisor run\n"
       "  sigvisor run --workload console --ops 100 --json\n"
       "  sigvisor run --workload divzero --ops 100 --trap=auto\n"
       "  sigvisor run --image path/to/guest.elf --timeout 5s",
       {"image", "variant", "workload", "ops", "cmdline", "memory", "timeout", "json", "quiet", "kvm",
        "trap"},
       RunCommand},
      {"probe", "measure what this host's KVM does and what trapping costs",
       "Boots tiny calibration guests and reports whether guest CPL0 is emulated (PVM) or\n"
       "native, whether SYSCALL enters CPL0, whether INT n works from CPL3, and which trap\n"
       "mechanisms reach the VMM, with their round-trip cost (median over --repeats loops of\n"
       "--iterations operations, minus an empty loop).",
       {"iterations", "repeats", "json", "kvm"}, ProbeCommand},
      {"images", "list the builds of the bundled kernel (its --variant values)",
       "Lists the embedded guest images (usable as --image NAME) with their size, entry\n"
       "point and ABI version.",
       {"json"}, ImagesCommand},
      {"sites", "list an image's trap sites (debug-register moves, segment loads)",
       "Scans the image's executable sections with Capstone (restarting at each ELF\n"
       "symbol) and lists every instruction --trap=patch arms: moves to and from DR0-DR7\n"
       "and segment-register loads (mov/pop to a segment register, lfs/lgs/lss, swapgs,\n"
       "wrfsbase/wrgsbase, wrmsr), with address, symbol+offset, bytes and disassembly.\n"
       "\nExamples:\n"
       "  sigvisor sites\n"
       "  sigvisor sites --image path/to/guest.elf --json",
       {"image", "variant", "json"}, SitesCommand},
  };
  return kCommands;
}

const Command* FindCommand(std::string_view name) {
  for (const Command& command : Commands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

int ReportError(std::string_view message) {
  std::fprintf(stderr, "sigvisor: error: %.*s\n", static_cast<int>(message.size()),
               message.data());
  return 2;
}

int ReportError(const absl::Status& status) { return ReportError(std::string(status.message())); }

std::string FlagsNotFor(const Command& command) {
  for (const Command& other : Commands()) {
    for (std::string_view name : other.flags) {
      if (std::find(command.flags.begin(), command.flags.end(), name) != command.flags.end()) {
        continue;
      }
      absl::CommandLineFlag* flag =
          absl::FindCommandLineFlag(absl::string_view(name.data(), name.size()));
      // A flag still at its default was not given (or given its default: harmless).
      if (flag != nullptr && flag->CurrentValue() != flag->DefaultValue()) {
        return absl::StrFormat("--%s does not apply to `sigvisor %s` (see `sigvisor help %s`)",
                               name, command.name, command.name);
      }
    }
  }
  return "";
}

std::string HelpText(const Command* command) {
  std::string out;
  if (command == nullptr) {
    out = "sigvisor: a KVM hypervisor for measuring the cost of signal delivery.\n\n"
          "usage: sigvisor <command> [flags]\n\ncommands:\n";
    for (const Command& c : Commands()) {
      absl::StrAppendFormat(&out, "  %-8s %s\n", c.name, c.summary);
    }
    out += "  help     show this, or `sigvisor help <command>` for a command's flags\n";
    return out;
  }
  absl::StrAppendFormat(&out, "usage: sigvisor %s [flags]\n\n%s\n\nflags:\n", command->name,
                        command->description);
  for (std::string_view name : command->flags) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(absl::string_view(name.data(), name.size()));
    if (flag == nullptr) continue;
    absl::StrAppendFormat(&out, "  --%-11s %s (default: %s)\n", name, flag->Help(),
                          flag->DefaultValue().empty() ? "\"\"" : flag->DefaultValue());
  }
  return out;
}

}  // namespace sigvisor::cli
