#pragma once
// A small, valid trace shared by the traces tests, and a scratch directory.

#include <filesystem>

#include "traces/trace.pb.h"

namespace ragged::traces::testing {

// Two ranks of a two-unit model, one step: all-gathers, forward and backward
// compute, reduce-scatters and an optimizer step on three streams, with
// memory samples and a summary. Rank 1 runs the same ops 250 ns later; its
// optimizer event has no name.
Trace make_sample_trace();

// A fresh directory under the system temp dir, removed on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  int entry_count() const;

 private:
  std::filesystem::path path_;
};

}  // namespace ragged::traces::testing
