// Replays every file of a corpus folder through one fuzz target, without
// libFuzzer or clang: `fuzz_replay TARGET FOLDER`. Fails on the first input
// that escapes as anything but InputError, or that takes longer than the
// limit; CTest runs it for every target over tests/fuzz/corpus/<target>/.

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/file_io.hpp"
#include "fuzz_targets.hpp"

namespace {

constexpr double kMaxSecondsPerInput = 5.0;

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 3) {
    std::cerr << "usage: fuzz_replay TARGET FOLDER\n";
    return 2;
  }
  const ragged::fuzz::FuzzTarget* target = ragged::fuzz::find_fuzz_target(argv[1]);
  if (target == nullptr) {
    std::cerr << "fuzz_replay: unknown target '" << argv[1] << "'\n";
    return 2;
  }
  std::vector<fs::path> inputs;
  for (const fs::directory_entry& entry : fs::directory_iterator(argv[2])) {
    if (entry.is_regular_file()) inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::cerr << "fuzz_replay: no inputs in " << argv[2] << "\n";
    return 1;
  }
  double slowest = 0;
  for (const fs::path& input : inputs) {
    const std::string data = ragged::read_file(input, ragged::kMaxTraceBytes);
    const auto start = std::chrono::steady_clock::now();
    try {
      target->run(data);
    } catch (const std::exception& e) {
      std::cerr << "fuzz_replay: " << input.string() << ": " << e.what() << "\n";
      return 1;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slowest = std::max(slowest, seconds);
    if (seconds > kMaxSecondsPerInput) {
      std::cerr << "fuzz_replay: " << input.string() << " took " << seconds << " s (limit " << kMaxSecondsPerInput << " s)\n";
      return 1;
    }
  }
  std::cout << argv[1] << ": " << inputs.size() << " inputs replayed, slowest " << slowest << " s\n";
  return 0;
}
