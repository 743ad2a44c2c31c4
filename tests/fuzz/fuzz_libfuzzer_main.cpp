// One libFuzzer executable per target (RAGGED_FUZZ_TARGET names it); built
// only with -DRAGGED_FUZZ=ON (clang, -fsanitize=fuzzer,address,undefined).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ragged::fuzz::FuzzTarget* target = ragged::fuzz::find_fuzz_target(RAGGED_FUZZ_TARGET);
  if (target == nullptr) std::abort();
  try {
    target->run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: %s\n", e.what());
    std::abort();
  }
  return 0;
}
