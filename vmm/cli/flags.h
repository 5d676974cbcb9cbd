// Every command-line flag of sigvisor, declared in one place. Commands read them
// into plain option structs at once; nothing else touches the flags.
#ifndef SIGVISOR_VMM_CLI_FLAGS_H_
#define SIGVISOR_VMM_CLI_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/time/time.h"

ABSL_DECLARE_FLAG(std::string, image);
ABSL_DECLARE_FLAG(std::string, variant);
ABSL_DECLARE_FLAG(std::string, workload);
ABSL_DECLARE_FLAG(std::string, ops);
ABSL_DECLARE_FLAG(std::string, cmdline);
ABSL_DECLARE_FLAG(std::vector<std::string>, module);
ABSL_DECLARE_FLAG(std::vector<std::string>, inject);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(bool, uaccess);
ABSL_DECLARE_FLAG(bool, irqchip);
ABSL_DECLARE_FLAG(int32_t, vcpus);
ABSL_DECLARE_FLAG(uint32_t, memory);
ABSL_DECLARE_FLAG(absl::Duration, timeout);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(bool, quiet);
ABSL_DECLARE_FLAG(std::string, kvm);
ABSL_DECLARE_FLAG(bool, no_sandbox);
ABSL_DECLARE_FLAG(uint64_t, max_output);
ABSL_DECLARE_FLAG(uint32_t, iterations);
ABSL_DECLARE_FLAG(uint32_t, repeats);
ABSL_DECLARE_FLAG(std::string, trap);
ABSL_DECLARE_FLAG(std::string, phase);
ABSL_DECLARE_FLAG(std::string, diff);
ABSL_DECLARE_FLAG(bool, stages);
ABSL_DECLARE_FLAG(std::string, gdb);
ABSL_DECLARE_FLAG(std::string, workloads);
ABSL_DECLARE_FLAG(std::string, variants);
ABSL_DECLARE_FLAG(std::string, traps);
ABSL_DECLARE_FLAG(std::string, repetitions);
ABSL_DECLARE_FLAG(std::string, shard);
ABSL_DECLARE_FLAG(bool, csv);
ABSL_DECLARE_FLAG(std::string, svg);
ABSL_DECLARE_FLAG(std::string, o);
ABSL_DECLARE_FLAG(std::string, peer);
ABSL_DECLARE_FLAG(std::string, arch);
ABSL_DECLARE_FLAG(uint32_t, cores);

#endif  // SIGVISOR_VMM_CLI_FLAGS_H_
