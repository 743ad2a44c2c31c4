#pragma once
// Stamps the provenance fields that every writer of a trace sets.

#include <chrono>
#include <string>

#include "traces/trace.pb.h"

namespace ragged::traces {

// Sets source, ragged_version and created_at (now, UTC); leaves the rest.
void stamp_metadata(Metadata* metadata, Source source);

// "2023-11-14T22:13:20Z": ISO 8601, UTC, whole seconds.
std::string iso8601_utc(std::chrono::system_clock::time_point time);

}  // namespace ragged::traces
