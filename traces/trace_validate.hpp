#pragma once
// Consistency checks on a Trace, run by every reader and writer so that a
// trace on disk is always one the reports and the comparison can trust.

#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

// Every problem found, each naming the field path, e.g.
// "events[12].end_ns (100) is before start_ns (250)". Empty when valid.
std::vector<std::string> trace_problems(const Trace& trace);

// Throws InputError "<origin>: <first problem> (N more)" when the trace has problems.
void check_trace(const Trace& trace, const std::string& origin);

}  // namespace ragged::traces
