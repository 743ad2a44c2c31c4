#pragma once
// protobuf logs some parse failures itself ("[libprotobuf ERROR ...] String
// field ... contains invalid UTF-8 data"), on stderr, before the caller can
// say anything. Routed here, the message becomes part of Ragged's own one-line
// error instead.

#include <string>

namespace ragged::traces {

// Sends protobuf's log messages to a per-thread buffer (once per process;
// FATAL messages still end the process, as protobuf requires).
void capture_protobuf_logs();

// The messages this thread captured since the last call, joined by "; ".
std::string take_protobuf_log();

}  // namespace ragged::traces
