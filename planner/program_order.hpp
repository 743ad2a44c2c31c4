#pragma once
// What the Program guarantees about the order of its ops whatever the
// timing, and the orders that bound its memory.
//
// An executor runs each stream's ops in issue order and starts an op only
// when its dependencies have finished; nothing else orders two ops of
// different streams. `HappensBefore` answers "has op a surely finished when
// op b starts?" from those two rules alone (vector clocks over the four
// streams: O(1) per query). The arena plan reuses memory only along these
// edges, so the GPU runs exactly the Program's synchronisation and no
// hidden wait of its own.
//
// Issue order is one valid execution; `reductions_last_order` is another,
// where every stream runs as far ahead as the dependencies allow and the
// reduce-scatter stream only when nothing else can (the reduce-scatters
// infinitely slow; an HSDP all-reduce, which reduces one shard, runs as
// soon as its reduce-scatter has). Whatever a strategy's backpressure rule
// lets pile up behind slow reduce-scatters is live in that order, so the
// static memory peak (`memory_breakdown`) takes the larger of the two.

#include <array>
#include <cstdint>
#include <vector>

#include "planner/program.hpp"

namespace ragged::planner {

class HappensBefore {
 public:
  explicit HappensBefore(const Program& program);

  // Whether op `a` has finished whenever op `b` starts, in every execution
  // (a is b's dependency, transitively, or earlier on b's stream).
  bool before(uint32_t a, uint32_t b) const;

 private:
  // Per op: its position on its stream, and for each stream the position of
  // the last op of that stream known to have finished when it starts (-1: none).
  std::vector<int64_t> position_;
  std::vector<uint8_t> stream_;
  std::vector<std::array<int64_t, kStreams>> clock_;
};

// The op ids in an order where the all-gather, compute and all-reduce
// streams run as far ahead as their dependencies allow and the
// reduce-scatter stream only when none can.
std::vector<uint32_t> reductions_last_order(const Program& program);

}  // namespace ragged::planner
