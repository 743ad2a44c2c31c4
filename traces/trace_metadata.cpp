#include "traces/trace_metadata.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/version.hpp"

namespace ragged::traces {

std::string iso8601_utc(std::chrono::system_clock::time_point time) {
  // fmt::gmtime, not the time_point formatter, which uses the local time zone in fmt 9.
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(time)));
}

void stamp_metadata(Metadata* metadata, Source source) {
  RAGGED_ASSERT(metadata != nullptr, "stamp_metadata needs a Metadata to fill");
  metadata->set_source(source);
  metadata->set_ragged_version(kVersion);
  metadata->set_created_at(iso8601_utc(std::chrono::system_clock::now()));
}

}  // namespace ragged::traces
