#include "traces/protobuf_log.hpp"

#include <google/protobuf/stubs/logging.h>

#include <mutex>
#include <utility>

namespace ragged::traces {
namespace {

thread_local std::string t_log;

void keep(google::protobuf::LogLevel level, const char*, int, const std::string& message) {
  if (level == google::protobuf::LOGLEVEL_FATAL) return;  // protobuf aborts after a FATAL whatever we do
  if (!t_log.empty()) t_log += "; ";
  t_log += message;
}

}  // namespace

void capture_protobuf_logs() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(keep); });
}

std::string take_protobuf_log() { return std::exchange(t_log, {}); }

}  // namespace ragged::traces
