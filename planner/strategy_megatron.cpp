// Megatron-FSDP: one flat bucket per FSDP unit
// (megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py,
// build_data_parallel_buffer_index). Element-wise flat but row-aligned: shard
// boundaries are multiples of c = lcm of the row sizes, parameters of c or
// more elements start on a multiple of c, smaller ones are never split.

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "planner/baseline_util.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {
namespace {

constexpr int64_t kOpenEnd = std::numeric_limits<int64_t>::max();

// Free space of the bucket that fragments may fill; the last gap is the open tail.
struct Gap {
  int64_t begin = 0;
  int64_t end = 0;
};

[[noreturn]] void throw_overflow(size_t tensors) {
  throw InputError(
      fmt::format("Megatron-FSDP layout of a unit of {} tensors: the lcm of its row sizes "
                  "makes the bucket overflow 64-bit offsets",
                  tensors));
}

int64_t checked_mul(int64_t a, int64_t b, size_t tensors) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) throw_overflow(tensors);
  return product;
}

int64_t checked_lcm(int64_t a, int64_t b, size_t tensors) { return checked_mul(a / std::gcd(a, b), b, tensors); }

// param_and_grad_buffer.py: chunk_size_factor = lcm of shape[1:].numel() (1 for vectors).
int64_t chunk_factor(const UnitProblem& problem) {
  int64_t c = 1;
  for (const PlanTensor& t : problem.tensors) {
    c = checked_lcm(c, std::max<int64_t>(t.dim0_stride, 1), problem.tensors.size());
  }
  return c;
}

// The first start >= begin on the tensor alignment from which a fragment of
// `elements` < c does not cross a multiple of c (every shard boundary is one).
int64_t fragment_start(int64_t begin, int64_t elements, int64_t c, int64_t align, int64_t common) {
  int64_t start = baseline::round_up(begin, align);
  const int64_t next_cut = (start / c + 1) * c;
  if (start + elements <= next_cut) return start;
  start = baseline::round_up(next_cut, align);
  if (start + elements <= (start / c + 1) * c) return start;
  return baseline::round_up(next_cut, common);  // only when align does not divide c
}

class MegatronStrategy final : public LayoutStrategy {
 public:
  std::string_view name() const override { return "megatron"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override;
};

UnitLayout MegatronStrategy::plan_unit(const UnitProblem& problem) const {
  const int64_t m = problem.ranks;
  const int64_t align = problem.tensor_align;
  const size_t n = problem.tensors.size();
  UnitLayout layout = baseline::start_layout(problem, Placement::kContiguous);
  layout.slots.resize(n);

  const int64_t c = chunk_factor(problem);
  const int64_t start_step = checked_lcm(c, align, n);  // starts of regular params: multiples of c and of align
  const int64_t bucket_step = checked_mul(m, c, n);
  // Offsets stay below total + 4*start_step per param + m*c: each param wastes
  // less than that before it, the bucket less than m*c after.
  const int64_t waste = checked_mul(static_cast<int64_t>(n) + 1, checked_mul(4, start_step, n), n);
  if (waste > kOpenEnd - bucket_step - problem.total_elements()) throw_overflow(n);

  // build_data_parallel_buffer_index: params of c or more elements in order,
  // each on the next multiple of c (and of the tensor alignment); a size that is not a multiple of c leaves
  // a gap up to the next one. (Upstream also pairs the remainders of two such
  // params in one c-block; we leave that gap to fragments.)
  std::vector<Gap> gaps;
  int64_t end = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t elements = problem.tensors[i].elements;
    if (elements < c) continue;
    const int64_t start = baseline::round_up(end, start_step);
    if (start > end) gaps.push_back({end, start});
    layout.slots[i] = {start, elements};
    end = start + elements;
  }
  gaps.push_back({end, kOpenEnd});

  // Fragments (fewer than c elements) fill the gaps first-fit in order, else
  // the tail; they never cross a multiple of c, so no shard splits them.
  int64_t bucket_end = end;
  for (size_t i = 0; i < n; ++i) {
    const int64_t elements = problem.tensors[i].elements;
    if (elements >= c) continue;
    for (size_t k = 0; k < gaps.size(); ++k) {
      const int64_t start = fragment_start(gaps[k].begin, elements, c, align, start_step);
      if (start + elements > gaps[k].end) continue;
      layout.slots[i] = {start, elements};
      bucket_end = std::max(bucket_end, start + elements);
      const Gap after{start + elements, gaps[k].end};
      if (start > gaps[k].begin) {
        gaps[k].end = start;
        if (after.end > after.begin) gaps.insert(gaps.begin() + static_cast<std::ptrdiff_t>(k) + 1, after);
      } else if (after.end > after.begin) {
        gaps[k] = after;
      } else {
        gaps.erase(gaps.begin() + static_cast<std::ptrdiff_t>(k));
      }
      break;
    }
  }

  // Bucket = ceil(L/(m*c))*m*c; rank r's shard is [r*S, (r+1)*S) with S a multiple of c.
  baseline::set_shard_size(layout, problem, baseline::round_up(bucket_end, bucket_step) / m);
  layout.honours_granularity = baseline::contiguous_honours_granularity(problem, layout);

  // Params are views of the bucket: zero-copy all-gather. param.grad is copied
  // into the unsharded grad bucket (no TE fused wgrad), then the reduced
  // shard is added into the main_grad shard.
  layout.copies.reduce_scatter_in = problem.total_elements();
  layout.copies.reduce_scatter_out = layout.shard_size;
  return layout;
}

}  // namespace

std::unique_ptr<LayoutStrategy> make_megatron_strategy() { return std::make_unique<MegatronStrategy>(); }

}  // namespace ragged::planner
