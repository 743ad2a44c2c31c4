#pragma once
// Applies the scenario's optimizer to one rank's shards on the host: AdamW;
// block-wise 8-bit Adam on matrices (a block never straddles ranks: shards
// cut matrices on block boundaries); Muon and Shampoo on hidden matrices, a
// ragged all-to-all gathering each matrix to its owner (chosen by the
// planner, load-balanced), the owner's math there and the scatter back: Muon
// gathers its momentum from the shards and orthogonalises it; Shampoo
// gathers the gradient and preconditions it with the block factors its
// owner keeps across steps. The same per-tensor decisions drive the
// unsharded reference.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/finite_check.hpp"
#include "backend/optimizer_math.hpp"
#include "backend/unit_shard.hpp"
#include "models/model_spec.hpp"
#include "planner/optimizer_program.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::backend {

enum class TensorRule { kAdamW, kAdam8bit, kMuon, kShampoo, kSgd };

// How the scenario's optimizer treats a tensor. Every optimizer kind is
// handled explicitly; an unset kind is an internal error, never AdamW.
TensorRule tensor_rule(const scenarios::Optimizer& optimizer, const models::TensorSpec& tensor);
// The AdamW settings of the optimizer (its own, or those it applies to the
// tensors it does not handle).
AdamWParams adamw_params(const scenarios::Optimizer& optimizer);
MuonParams muon_params(const scenarios::Optimizer& optimizer);
ShampooParams shampoo_params(const scenarios::Optimizer& optimizer);
SgdParams sgd_params(const scenarios::Optimizer& optimizer);
// 8-bit Adam's quantisation tiles over a matrix (block_rows x block_cols of
// the scenario), for a span of it starting at element `tensor_offset`.
Adam8bitTiles adam8bit_tiles(const scenarios::Optimizer& optimizer, const models::TensorSpec& tensor,
                             int64_t tensor_offset = 0);
// Whether a shard piece starting at element `tensor_offset` starts a tile row.
bool starts_tile_row(const Adam8bitTiles& tiles, int64_t tensor_offset);

class HostOptimizer {
 public:
  HostOptimizer(const scenarios::Optimizer& optimizer, std::vector<UnitShard>* shards,
                std::vector<planner::OwnedMatrix> owned, Communicator* comm, Communicator* expert_comm = nullptr);
  ~HostOptimizer();

  // Phases of one unit's update, as the Program's optimizer ops order them.
  // `momentum` fills the update buffer (Muon: Nesterov momentum; Shampoo: the
  // gradient); `orthogonalize` runs the owner's math on the gathered
  // matrices (Newton-Schulz; Shampoo's preconditioning at step `step`).
  void momentum(int unit);
  void gather_to_owners(int unit);
  void orthogonalize(int unit, int64_t step);
  void scatter_from_owners(int unit);
  void update(int unit, int64_t step);

  // Bytes the optimizer's state holds on this rank now (moments, codes,
  // scales, update buffers, gathered matrices, Shampoo's factors).
  int64_t state_bytes() const;

  // The first NaN or infinity in the unit's optimizer state on this rank
  // (moments, momentum, 8-bit Adam's block scales), or none.
  std::optional<NonFinite> first_non_finite_state(int unit) const;

 private:
  struct UnitState;
  const UnitShard& shard(int unit) const { return (*shards_)[static_cast<size_t>(unit)]; }

  scenarios::Optimizer optimizer_;
  std::vector<UnitShard>* shards_;
  std::vector<planner::OwnedMatrix> owned_;
  Communicator* comm_;
  Communicator* expert_comm_;  // the routed experts' matrices travel over their expert shard group
  // Where a matrix of `group` (planner::OwnedMatrix::group) goes to its owner.
  Communicator& comm_for(planner::Group group) const;
  std::vector<std::unique_ptr<UnitState>> state_;
};

}  // namespace ragged::backend
