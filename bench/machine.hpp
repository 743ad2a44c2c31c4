#pragma once
// The machine a benchmark report was generated on.

#include <fstream>
#include <string>

namespace ragged::bench {

inline std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// The 1-minute load average (/proc/loadavg): on a shared machine wall time
// exceeds CPU time when it is above the core count.
inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one_minute;
  in >> one_minute;
  return one_minute.empty() ? "unknown" : one_minute;
}

}  // namespace ragged::bench
