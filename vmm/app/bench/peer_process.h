// A peer's process (peer_qemu.cc): its binary found on $PATH, run with stdin from
// /dev/null and its output into files, killed at a deadline, its wall and CPU time
// measured. Private to the bench library.
#ifndef SIGVISOR_VMM_APP_BENCH_PEER_PROCESS_H_
#define SIGVISOR_VMM_APP_BENCH_PEER_PROCESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace sigvisor::bench {

// `binary` on $PATH, or "".
std::string FindOnPath(const std::string& binary);

struct Spawned {
  int status = -1;        // exit status, or -1 (killed, could not start)
  bool timed_out = false;
  uint64_t wall_ns = 0;
  uint64_t cpu_ns = 0;    // the child's user + system time, all its threads
  std::string error;      // could not start
};

// Runs argv with stdin /dev/null and stdout/stderr into files; kills it after `timeout`.
Spawned Spawn(const std::vector<std::string>& argv, const std::string& out_path,
              const std::string& err_path, absl::Duration timeout);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_PEER_PROCESS_H_
