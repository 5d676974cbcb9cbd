// The human report of `sigvisor run`: outcome, timings, the exit table, KVM's
// statistics and one block per measured phase.
#ifndef SIGVISOR_VMM_REPORT_TEXT_REPORT_H_
#define SIGVISOR_VMM_REPORT_TEXT_REPORT_H_

#include <string>

#include "vmm/report/run_record.h"

namespace sigvisor {

std::string FormatRunReport(const RunRecord& record);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_TEXT_REPORT_H_
