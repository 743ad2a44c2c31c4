#pragma once
// The entry points the fuzzers drive (libFuzzer under -DRAGGED_FUZZ=ON) and
// the replay driver runs on every kept input (tests/fuzz/corpus/<target>/).
// Each takes raw bytes and feeds them to one reader the way the command line
// does. Bad input ending in InputError is the expected outcome and returns;
// anything else (a crash, an InternalError, any other exception) escapes and
// is a finding.

#include <string_view>
#include <vector>

namespace ragged::fuzz {

struct FuzzTarget {
  const char* name;                  // the corpus folder's name
  void (*run)(std::string_view data);
};

const std::vector<FuzzTarget>& fuzz_targets();
const FuzzTarget* find_fuzz_target(std::string_view name);  // nullptr when unknown

}  // namespace ragged::fuzz
