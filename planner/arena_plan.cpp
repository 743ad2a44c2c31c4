#include "planner/arena_plan.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "planner/program_order.hpp"

namespace ragged::planner {
namespace {

struct Lifetime {
  int64_t start = -1;  // index of the alloc op
  int64_t end = -1;    // index of the free op
};

std::vector<Lifetime> lifetimes(const Program& program) {
  std::vector<Lifetime> out(program.buffers.size());
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) continue;
    RAGGED_ASSERT(op.buffer >= 0 && static_cast<size_t>(op.buffer) < out.size(),
                  fmt::format("op '{}' allocates or frees no buffer of the Program", op.name));
    Lifetime& life = out[static_cast<size_t>(op.buffer)];
    const std::string& name = program.buffers[static_cast<size_t>(op.buffer)].name;
    if (op.kind == OpKind::kAlloc) {
      RAGGED_ASSERT(life.start < 0, fmt::format("buffer '{}' is allocated twice", name));
      life.start = static_cast<int64_t>(i);
    } else {
      RAGGED_ASSERT(life.start >= 0 && life.end < 0, fmt::format("buffer '{}' is freed before its alloc or twice", name));
      life.end = static_cast<int64_t>(i);
    }
  }
  for (size_t b = 0; b < out.size(); ++b) {
    RAGGED_ASSERT(out[b].start >= 0 && out[b].end >= 0,
                  fmt::format("buffer '{}' is not allocated and freed once", program.buffers[b].name));
  }
  return out;
}

// Two buffers may share memory only when one's free surely finishes before
// the other's alloc, whatever the timing: then the reuse needs no wait the
// Program does not already have. (Issue order alone is not enough: a
// gradient buffer freed on the reduce-scatter stream before the next one's
// alloc in issue order may still be reduced while the compute stream
// writes the next; sharing their memory would add a wait that serialises
// the reduce-scatter with the backward on the GPU.)
class Coexistence {
 public:
  Coexistence(const Program& program, const std::vector<Lifetime>& life) : order_(program), life_(life) {}
  bool operator()(size_t a, size_t b) const {
    return !order_.before(static_cast<uint32_t>(life_[a].end), static_cast<uint32_t>(life_[b].start)) &&
           !order_.before(static_cast<uint32_t>(life_[b].end), static_cast<uint32_t>(life_[a].start));
  }

 private:
  HappensBefore order_;
  const std::vector<Lifetime>& life_;
};

// Places the buffers in `order`, each at the smallest gap it fits among the
// already placed buffers it coexists with (or above them all).
void place_in_order(const Coexistence& coexist, const std::vector<size_t>& order, ArenaPlan& plan) {
  std::fill(plan.offsets.begin(), plan.offsets.end(), -1);
  plan.bytes = 0;
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of the coexisting ones
  for (size_t b : order) {
    const int64_t size = plan.sizes[b];
    if (size == 0) continue;
    taken.clear();
    for (size_t c : placed) {
      if (coexist(b, c)) taken.emplace_back(plan.offsets[c], plan.offsets[c] + plan.sizes[c]);
    }
    std::sort(taken.begin(), taken.end());
    int64_t best = -1, best_gap = 0, top = 0;
    for (const auto& [offset, end] : taken) {
      const int64_t gap = offset - top;
      if (gap >= size && (best < 0 || gap < best_gap)) {
        best = top;
        best_gap = gap;
      }
      top = std::max(top, end);
    }
    plan.offsets[b] = best >= 0 ? best : top;
    plan.bytes = std::max(plan.bytes, plan.offsets[b] + size);
    placed.push_back(b);
  }
}

// No one order wins everywhere: largest first suits uniform dense models,
// longest-lived first or issue order suits units of very different sizes
// (MoE). Programs have hundreds of buffers, so trying each is cheap.
// The most bytes live at once while each buffer lives, when the ops run in
// `order` (op ids), given the bytes live after each position.
std::vector<int64_t> breadth_in(const std::vector<Lifetime>& life, const std::vector<uint32_t>& order,
                                const std::vector<int64_t>& live_after) {
  std::vector<size_t> position(order.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  std::vector<int64_t> breadth(life.size(), 0);
  for (size_t b = 0; b < life.size(); ++b) {
    const size_t from = position[static_cast<size_t>(life[b].start)], to = position[static_cast<size_t>(life[b].end)];
    for (size_t k = from; k < to; ++k) breadth[b] = std::max(breadth[b], live_after[k]);
  }
  return breadth;
}

void place(const Program& program, const std::vector<Lifetime>& life, const Coexistence& coexist,
           const std::vector<int64_t>& breadth, ArenaPlan& plan) {
  const auto duration = [&](size_t b) { return life[b].end - life[b].start; };
  using Before = std::function<bool(size_t, size_t)>;
  const std::vector<Before> orders = {
      [&](size_t a, size_t b) { return plan.sizes[a] > plan.sizes[b]; },
      [&](size_t a, size_t b) { return duration(a) > duration(b); },
      [&](size_t a, size_t b) {
        return static_cast<double>(plan.sizes[a]) * static_cast<double>(duration(a)) >
               static_cast<double>(plan.sizes[b]) * static_cast<double>(duration(b));
      },
      [&](size_t a, size_t b) { return life[a].start < life[b].start; },
      [&](size_t a, size_t b) {
        return breadth[a] != breadth[b] ? breadth[a] > breadth[b] : plan.sizes[a] > plan.sizes[b];
      },
      [&](size_t a, size_t b) {
        return breadth[a] != breadth[b] ? breadth[a] > breadth[b] : duration(a) > duration(b);
      },
      // Earliest freed first: Llama-3-70B under full checkpointing (eager,
      // its recomputed blocks' workspaces grown by what eager autograd
      // keeps) packs its head's loss buffers without a gap only so.
      [&](size_t a, size_t b) { return life[a].end < life[b].end; },
  };
  std::vector<int64_t> best_offsets;
  int64_t best_bytes = -1;
  std::vector<size_t> order(life.size());
  // Each order also with the per-step gradient shards (FSDP2's, allocated
  // one by one through the backward and freed after the optimizer) placed
  // first, stacked at the bottom with the rest packed around them.
  // An executor that keeps them with its units sizes them 0: then those
  // orders would only repeat the others.
  const auto grad_shard = [&](size_t b) {
    return program.buffers[b].kind == BufferKind::kGradShards && plan.sizes[b] > 0;
  };
  bool has_grad_shards = false;
  for (size_t b = 0; b < program.buffers.size(); ++b) has_grad_shards = has_grad_shards || grad_shard(b);
  for (const bool shards_first : {false, true}) {
    if (shards_first && !has_grad_shards) break;
    for (const Before& before : orders) {
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (shards_first && grad_shard(a) != grad_shard(b)) return grad_shard(a);
        if (before(a, b) != before(b, a)) return before(a, b);
        return life[a].start < life[b].start;
      });
      place_in_order(coexist, order, plan);
      if (best_bytes < 0 || plan.bytes < best_bytes) {
        best_bytes = plan.bytes;
        best_offsets = plan.offsets;
      }
    }
  }
  plan.offsets = std::move(best_offsets);
  plan.bytes = best_bytes;
}

// The earlier buffers b's alloc must wait for: those overlapping b's
// addresses, latest free first, skipping one whose overlap is already
// covered by a later one (which itself waited for it). Placement only
// overlaps buffers whose free happens before the alloc, so these waits are
// implied by the Program; executors keep them as a guard.
void find_reuses(const std::vector<Lifetime>& life, ArenaPlan& plan) {
  const size_t n = life.size();
  plan.reuses.assign(n, {});
  std::vector<size_t> earlier;
  std::vector<std::pair<int64_t, int64_t>> covered;
  for (size_t b = 0; b < n; ++b) {
    if (plan.sizes[b] == 0) continue;
    const int64_t lo = plan.offsets[b], hi = lo + plan.sizes[b];
    earlier.clear();
    for (size_t c = 0; c < n; ++c) {
      if (plan.sizes[c] == 0 || life[c].end > life[b].start) continue;
      if (plan.offsets[c] < hi && lo < plan.offsets[c] + plan.sizes[c]) earlier.push_back(c);
    }
    std::sort(earlier.begin(), earlier.end(), [&](size_t x, size_t y) { return life[x].end > life[y].end; });
    covered.clear();
    for (size_t c : earlier) {
      const int64_t from = std::max(lo, plan.offsets[c]), to = std::min(hi, plan.offsets[c] + plan.sizes[c]);
      // Is [from, to) inside the union of `covered` (kept sorted and merged)?
      int64_t reach = from;
      for (const auto& [a, z] : covered) {
        if (a > reach) break;
        reach = std::max(reach, z);
      }
      if (reach >= to) continue;
      plan.reuses[b].push_back(static_cast<int>(c));
      covered.emplace_back(from, to);
      std::sort(covered.begin(), covered.end());
      std::vector<std::pair<int64_t, int64_t>> merged;
      for (const auto& range : covered) {
        if (!merged.empty() && range.first <= merged.back().second) merged.back().second = std::max(merged.back().second, range.second);
        else merged.push_back(range);
      }
      covered = std::move(merged);
    }
  }
}

}  // namespace

int64_t bytes_beside_unit_state(const Buffer& buffer) {
  return buffer.kind == BufferKind::kGradShards ? 0 : buffer.bytes;
}

ArenaPlan plan_arena(const Program& program, int64_t alignment, const BufferBytes& bytes_of) {
  RAGGED_ASSERT(alignment > 0 && (alignment & (alignment - 1)) == 0, "arena alignment must be a power of two");
  const std::vector<Lifetime> life = lifetimes(program);
  ArenaPlan plan;
  plan.offsets.assign(program.buffers.size(), -1);
  plan.sizes.resize(program.buffers.size());
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const int64_t bytes = bytes_of ? bytes_of(program.buffers[b]) : program.buffers[b].bytes;
    RAGGED_ASSERT(bytes >= 0, fmt::format("buffer '{}' has negative size", program.buffers[b].name));
    plan.sizes[b] = (bytes + alignment - 1) / alignment * alignment;
  }
  // The fullest moment of each buffer's life ("greedy by breadth": the
  // buffers of the fullest moments are packed first), over the two orders
  // that bound the Program's memory (planner/program_order.hpp).
  std::vector<uint32_t> issue_order(program.ops.size());
  std::iota(issue_order.begin(), issue_order.end(), 0u);
  std::vector<int64_t> breadth(program.buffers.size(), 0);
  for (const std::vector<uint32_t>& order : {issue_order, reductions_last_order(program)}) {
    std::vector<int64_t> live_after(order.size());
    int64_t live = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      const Op& op = program.ops[order[k]];
      if (op.kind == OpKind::kAlloc) live += plan.sizes[static_cast<size_t>(op.buffer)];
      if (op.kind == OpKind::kFree) live -= plan.sizes[static_cast<size_t>(op.buffer)];
      live_after[k] = live;
      plan.peak_live = std::max(plan.peak_live, live);
    }
    const std::vector<int64_t> in_order = breadth_in(life, order, live_after);
    for (size_t b = 0; b < breadth.size(); ++b) breadth[b] = std::max(breadth[b], in_order[b]);
  }
  const Coexistence coexist(program, life);
  place(program, life, coexist, breadth, plan);
  find_reuses(life, plan);
  return plan;
}

}  // namespace ragged::planner
