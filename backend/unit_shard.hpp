#pragma once
// One rank's state for one FSDP unit on the host: its master shard (fp32, S
// elements laid out by the plan), its gradient accumulator, the optimizer's
// state, and the address map (DBuffer) that relates shard offsets, tensor
// elements and the gathered buffer.

#include <cstdint>
#include <vector>

#include "backend/expert_pieces.hpp"
#include "models/model_spec.hpp"
#include "planner/dbuffer.hpp"
#include "planner/plan.hpp"

namespace ragged::backend {

class UnitShard {
 public:
  UnitShard(const models::UnitSpec& spec, const planner::UnitPlan& plan, int rank, int64_t first_tensor_id);

  // Fills the master shard with the model's initial values (initial_value()).
  // A mesh rank's unit (`origins`: where each of its tensors lies in the
  // whole model, expert_pieces.hpp) holds pieces of the whole tensors (tp
  // rank `tp_rank`'s, an ep rank's experts): its values are theirs there.
  void initialise(uint64_t seed, const std::vector<TensorOrigin>* origins = nullptr, int tp_rank = 0);

  int64_t shard_size() const { return map_.shard_size(); }
  int64_t ranks() const { return map_.ranks(); }
  int rank() const { return rank_; }
  // The ranks it is sharded over: the shard group, or the expert shard group.
  planner::Group group() const { return group_; }
  bool contiguous() const { return map_.placement() == planner::Placement::kContiguous; }
  const planner::DBufferMap& map() const { return map_; }
  const planner::UnitLayout& layout() const { return layout_; }
  const std::vector<planner::ShardView>& views() const { return views_; }
  const models::UnitSpec& spec() const { return *spec_; }
  int64_t tensor_id(int tensor) const { return first_tensor_id_ + tensor; }

  std::vector<float>& master() { return master_; }
  std::vector<float>& grad() { return grad_; }
  const std::vector<float>& master() const { return master_; }
  const std::vector<float>& grad() const { return grad_; }

  // Elements of every tensor when unsharded (the copy-out destination and
  // the per-tensor gradient buffer of rank-major strategies).
  int64_t unsharded_elements() const;
  int64_t tensor_offset_unsharded(int tensor) const;  // in that per-tensor concatenation

  // Where each tensor starts, in elements, in a gathered buffer (contiguous:
  // views of the m*S buffer) or in a per-tensor concatenation (rank-major
  // copies); and pointers to them in a host buffer.
  std::vector<int64_t> tensor_offsets(bool per_tensor) const;
  std::vector<const float*> params_in(const float* buffer, bool per_tensor) const;
  std::vector<float*> grads_in(float* buffer, bool per_tensor) const;

  // Rank-major: copy the gathered [m][S] buffer into per-tensor storage; pack
  // per-tensor gradients into the [m][S] reduce-scatter input.
  void copy_out(const float* gathered, float* per_tensor) const;
  void pack(const float* per_tensor, float* gathered) const;

  // ZeRO-3's fetch groups (UnitLayout::fetch_groups; also a persistent
  // tensor, gathered alone): a group's gathered buffer is [m][S_g], each
  // rank's slot its chunks of the group's tensors one after another.
  int64_t group_shard_elements(const std::vector<int>& group) const;
  // This rank's chunks of the group's tensors into its slot of `gathered`.
  void fill_group_slot(const std::vector<int>& group, float* gathered) const;
  // Where each tensor of the group starts in per-tensor storage of padded
  // pieces ([m][chunk] each, in group order); of one tensor, in `gathered` itself.
  std::vector<int64_t> group_piece_offsets(const std::vector<int>& group) const;
  void copy_out_group(const std::vector<int>& group, const float* gathered, float* pieces) const;
  // The tensors ZeRO-3 keeps gathered (TensorSlot::persistent).
  std::vector<int> persistent_tensors() const;
  // ZeRO-3's units: every tensor is fetched by a group or kept gathered, so
  // its parameters are read tensor by tensor, never from a whole-unit buffer.
  bool gathered_by_tensor() const { return gathered_by_tensor_; }

 private:
  int64_t gathered_offset(int tensor, bool per_tensor) const;

  const models::UnitSpec* spec_;
  planner::DBufferMap map_;
  planner::UnitLayout layout_;
  bool gathered_by_tensor_ = false;
  int rank_;
  planner::Group group_;
  int64_t first_tensor_id_;
  std::vector<planner::ShardView> views_;
  std::vector<int64_t> unsharded_offsets_;
  std::vector<float> master_;
  std::vector<float> grad_;
};

}  // namespace ragged::backend
