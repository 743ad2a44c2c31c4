#pragma once
// Export to the Chrome trace-event JSON format, which ui.perfetto.dev and
// chrome://tracing open: one process per rank, one thread per stream,
// a complete ("X") event per trace event and a "memory" counter per rank.

#include <filesystem>
#include <string>

#include "traces/trace.pb.h"

namespace ragged::traces {

std::string to_chrome_trace(const Trace& trace);

// Writes to_chrome_trace(trace) atomically; throws InputError.
void write_chrome_trace(const Trace& trace, const std::filesystem::path& path);

}  // namespace ragged::traces
