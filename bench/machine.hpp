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

}  // namespace ragged::bench
