// `sigvisor trace` output: the annotated listing, the summary (counts checked against
// the ledger, per-function profile, stages), the JSON document, and the side-by-side
// comparison of two variants' traces of one op.
#ifndef SIGVISOR_VMM_TRACE_FORMAT_H_
#define SIGVISOR_VMM_TRACE_FORMAT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "vmm/trace/analysis.h"
#include "vmm/trace/trace.h"

namespace sigvisor::trace {

// What was traced, for headers.
struct TraceSource {
  std::string image;    // "kernel baseline (embedded)"
  std::string variant;  // "baseline"; "" for an image file
  std::string cmdline;  // the guest command line
};

// Every entry, one line each, with a header line wherever the function path changes
// and the op boundaries marked.
std::string FormatListing(const Trace& trace, const Analysis& analysis);

// Why the summary has no ledger count to check the trace against: the run timed out
// before the phase ended (say so, and how to give it longer: issue 30 blamed the host),
// it ended otherwise first, the ops could not be cut apart, or this host does not count
// kernel instructions.
std::string NoLedgerCheckReason(const Trace& trace);

// The counts (checked against the ledger), the profile and the stages of one op.
std::string FormatSummary(const TraceSource& source, const Trace& trace,
                          const Analysis& analysis);

// schema sigvisor.trace/1 (docs/trace.md).
nlohmann::ordered_json TraceToJson(const TraceSource& source, const Trace& trace,
                                   const Analysis& analysis);

// One op of `a` and of `b` side by side: stages, functions, and the instructions
// that differ (aligned by function and instruction text) with a little context.
struct TraceDiff {
  std::string text;
  nlohmann::ordered_json json;
};
TraceDiff DiffTraces(const TraceSource& source_a, const Trace& a, const Analysis& analysis_a,
                     const TraceSource& source_b, const Trace& b, const Analysis& analysis_b);

}  // namespace sigvisor::trace

#endif  // SIGVISOR_VMM_TRACE_FORMAT_H_
