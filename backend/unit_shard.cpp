#include "backend/unit_shard.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include "backend/tensor_pieces.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"
#include "common/task_pool.hpp"

namespace ragged::backend {
namespace {

// body(begin, end) over [0, n) in contiguous pieces, one a thread of the
// machine's: every element is written by exactly one piece, so the result is
// the serial loop's. A 2.8B-parameter model's initial values took a minute on
// one core.
template <typename Body>
void for_pieces(int64_t n, const Body& body) {
  constexpr int64_t kSerialBelow = int64_t{1} << 20;
  const int64_t threads = std::min<int64_t>(hardware_threads(), std::max<int64_t>(1, n / kSerialBelow));
  if (threads <= 1) {
    body(0, n);
    return;
  }
  const int64_t piece = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) {
    pool.emplace_back([&body, n, piece, t] { body(std::min(n, t * piece), std::min(n, (t + 1) * piece)); });
  }
  body(0, std::min(n, piece));
  for (std::thread& thread : pool) thread.join();
}

}  // namespace

UnitShard::UnitShard(const models::UnitSpec& spec, const planner::UnitPlan& plan, int rank, int64_t first_tensor_id)
    : spec_(&spec),
      map_(plan.problem, plan.layout),
      layout_(plan.layout),
      rank_(rank),
      group_(plan.group),
      first_tensor_id_(first_tensor_id),
      views_(map_.shard_views(rank)),
      master_(static_cast<size_t>(plan.layout.shard_size), 0.0f),
      grad_(static_cast<size_t>(plan.layout.shard_size), 0.0f) {
  int64_t offset = 0;
  for (const models::TensorSpec& t : spec.tensors) {
    unsharded_offsets_.push_back(offset);
    offset += t.numel();
  }
  gathered_by_tensor_ = !layout_.fetch_groups.empty() || !persistent_tensors().empty();
}

void UnitShard::initialise(uint64_t seed, const std::vector<TensorOrigin>* origins, int tp_rank) {
  std::fill(master_.begin(), master_.end(), 0.0f);
  for (const planner::ShardView& v : views_) {
    const models::TensorSpec& t = spec_->tensors[static_cast<size_t>(v.tensor)];
    const TensorOrigin origin = origins ? origins->at(static_cast<size_t>(v.tensor)) : TensorOrigin{tensor_id(v.tensor), &t, 0};
    for_pieces(v.elements, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t index = t.tp_cut != models::TensorCut::kWhole
                                  ? whole_index(t, *origin.whole, tp_rank, v.tensor_offset + i)
                                  : origin.first + v.tensor_offset + i;
        master_[static_cast<size_t>(v.shard_offset + i)] = initial_value(seed, *origin.whole, origin.id, index);
      }
    });
  }
}

int64_t UnitShard::unsharded_elements() const {
  return unsharded_offsets_.empty() ? 0 : unsharded_offsets_.back() + spec_->tensors.back().numel();
}

int64_t UnitShard::tensor_offset_unsharded(int tensor) const { return unsharded_offsets_[static_cast<size_t>(tensor)]; }

std::vector<int64_t> UnitShard::tensor_offsets(bool per_tensor) const {
  std::vector<int64_t> out;
  for (size_t t = 0; t < spec_->tensors.size(); ++t) out.push_back(gathered_offset(static_cast<int>(t), per_tensor));
  return out;
}

std::vector<const float*> UnitShard::params_in(const float* buffer, bool per_tensor) const {
  std::vector<const float*> out;
  for (int64_t offset : tensor_offsets(per_tensor)) out.push_back(buffer + offset);
  return out;
}

// Where tensor t starts in a buffer holding the unit unsharded: the
// per-tensor concatenation, the contiguous layout's interval, or (a rank-major
// unit of one tensor, gathered zero-copy as ZeRO-3 does) the buffer itself.
int64_t UnitShard::gathered_offset(int tensor, bool per_tensor) const {
  if (per_tensor) return unsharded_offsets_[static_cast<size_t>(tensor)];
  if (contiguous()) return map_.unsharded_offset(tensor);
  RAGGED_ASSERT(spec_->tensors.size() == 1, "a rank-major unit of several tensors is read from its copies");
  return 0;
}

std::vector<float*> UnitShard::grads_in(float* buffer, bool per_tensor) const {
  std::vector<float*> out;
  for (int64_t offset : tensor_offsets(per_tensor)) out.push_back(buffer + offset);
  return out;
}

void UnitShard::copy_out(const float* gathered, float* per_tensor) const {
  RAGGED_ASSERT(!contiguous(), "only rank-major layouts copy out of the gathered buffer");
  for (size_t t = 0; t < spec_->tensors.size(); ++t) {
    float* dst = per_tensor + unsharded_offsets_[t];
    for (const planner::CopyPiece& piece : map_.copy_out_pieces(static_cast<int>(t))) {
      std::copy_n(gathered + piece.src_offset, piece.elements, dst + piece.dst_offset);
    }
  }
}

void UnitShard::pack(const float* per_tensor, float* gathered) const {
  RAGGED_ASSERT(!contiguous(), "only rank-major layouts pack gradients");
  for (size_t t = 0; t < spec_->tensors.size(); ++t) {
    const float* src = per_tensor + unsharded_offsets_[t];
    for (const planner::CopyPiece& piece : map_.copy_out_pieces(static_cast<int>(t))) {
      std::copy_n(src + piece.dst_offset, piece.elements, gathered + piece.src_offset);
    }
  }
}

int64_t UnitShard::group_shard_elements(const std::vector<int>& group) const {
  return planner::group_shard_elements(layout_, group);
}

void UnitShard::fill_group_slot(const std::vector<int>& group, float* gathered) const {
  float* slot = gathered + rank_ * group_shard_elements(group);
  for (int t : group) {
    const planner::TensorSlot& s = layout_.slots[static_cast<size_t>(t)];
    slot = std::copy_n(master_.begin() + s.offset, s.length, slot);
  }
}

std::vector<int64_t> UnitShard::group_piece_offsets(const std::vector<int>& group) const {
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (int t : group) {
    offsets.push_back(offset);
    offset += ranks() * layout_.slots[static_cast<size_t>(t)].length;
  }
  return offsets;
}

void UnitShard::copy_out_group(const std::vector<int>& group, const float* gathered, float* pieces) const {
  const int64_t group_shard = group_shard_elements(group);
  int64_t in_slot = 0;
  for (int t : group) {
    const int64_t chunk = layout_.slots[static_cast<size_t>(t)].length;
    for (int64_t r = 0; r < ranks(); ++r) pieces = std::copy_n(gathered + r * group_shard + in_slot, chunk, pieces);
    in_slot += chunk;
  }
}

std::vector<int> UnitShard::persistent_tensors() const {
  std::vector<int> tensors;
  for (size_t t = 0; t < layout_.slots.size(); ++t) {
    if (layout_.slots[t].persistent) tensors.push_back(static_cast<int>(t));
  }
  return tensors;
}

}  // namespace ragged::backend
