#pragma once
// A run whose numbers stop being finite has failed, whatever else it matches:
// a NaN compares equal to itself bit for bit, so a sharding bug that turns
// the parameters and the reference into the same NaNs would pass a bitwise
// comparison. Every step each rank scans its shards (parameters, gradients,
// optimizer states) and the loss; the first finding is agreed over the world
// so that every rank stops at the same step and rank 0 reports it by name.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/unit_shard.hpp"
#include "models/model_spec.hpp"

namespace ragged::backend {

// What holds the non-finite value; the names are the report's words.
enum class Quantity : int { kLoss, kParameter, kGradient, kFirstMoment, kSecondMoment, kMomentum, kQuantScale,
                            kPreconditioner };
std::string_view quantity_name(Quantity quantity);

struct NonFinite {
  Quantity quantity = Quantity::kLoss;
  int64_t tensor_id = -1;  // model order (units, then tensors); -1 for the loss
  int64_t element = -1;    // within the tensor (or the state's own index for scales)
  float value = 0;         // NaN, +inf or -inf
  int64_t step = 0;
  int rank = 0;
};

// "step 3, rank 1: the gradient of layers.0.attn.wq.weight [17] is nan".
std::string describe(const NonFinite& finding, const models::ModelSpec& model);

// The first non-finite element of a shard-indexed array of `shard` (its
// master, gradient or a per-element optimizer state), named by the tensor a
// view places there; padding between views holds no model value and is not
// read.
std::optional<NonFinite> first_non_finite(const UnitShard& shard, std::span<const float> values, Quantity quantity);
// The same over one view of the shard.
std::optional<NonFinite> first_non_finite(const UnitShard& shard, const planner::ShardView& view,
                                          std::span<const float> values, Quantity quantity);

// The first non-finite element of a whole tensor's values.
std::optional<NonFinite> first_non_finite(std::span<const float> values, int64_t tensor_id, Quantity quantity);

// The first non-finite element among the master shards of this rank.
std::optional<NonFinite> first_non_finite_master(const std::vector<UnitShard>& shards);

// A finding for this rank's loss when it is not finite.
std::optional<NonFinite> non_finite_loss(double loss);

// The finding of the lowest rank that has one at `step`, on every rank of
// `world` (a collective: every rank calls it every step, found or not).
std::optional<NonFinite> agree_non_finite(const std::optional<NonFinite>& mine, int64_t step, Communicator& world);

}  // namespace ragged::backend
