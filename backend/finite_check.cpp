#include "backend/finite_check.hpp"

#include <array>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::backend {

std::string_view quantity_name(Quantity quantity) {
  switch (quantity) {
    case Quantity::kLoss: return "loss";
    case Quantity::kParameter: return "parameter";
    case Quantity::kGradient: return "gradient";
    case Quantity::kFirstMoment: return "optimizer first moment";
    case Quantity::kSecondMoment: return "optimizer second moment";
    case Quantity::kMomentum: return "momentum";
    case Quantity::kQuantScale: return "8-bit Adam block scale";
    case Quantity::kPreconditioner: return "preconditioner";
  }
  return "value";
}

namespace {

const models::TensorSpec* tensor_by_id(const models::ModelSpec& model, int64_t id) {
  for (const models::UnitSpec& unit : model.units) {
    if (id < static_cast<int64_t>(unit.tensors.size())) return &unit.tensors[static_cast<size_t>(id)];
    id -= static_cast<int64_t>(unit.tensors.size());
  }
  return nullptr;
}

std::string value_text(float value) {
  if (std::isnan(value)) return "nan";
  return value > 0 ? "+inf" : "-inf";
}

// A finding travels as floats through the in-place all-gather: integers are
// split into 22-bit halves, which a float holds exactly.
constexpr int kFields = 7;
constexpr int64_t kHalf = int64_t{1} << 22;

std::array<float, kFields> encode(const std::optional<NonFinite>& f) {
  if (!f) return {};
  RAGGED_ASSERT(f->tensor_id < kHalf * kHalf && f->element < kHalf * kHalf, "a finding's indices fit 44 bits");
  const int64_t id = f->tensor_id + 1;  // the loss's -1 becomes 0
  const int64_t element = f->element + 1;
  return {1.0f,
          static_cast<float>(static_cast<int>(f->quantity)),
          static_cast<float>(id / kHalf),
          static_cast<float>(id % kHalf),
          static_cast<float>(element / kHalf),
          static_cast<float>(element % kHalf),
          f->value};
}

NonFinite decode(const float* fields, int64_t step, int rank) {
  NonFinite f;
  f.quantity = static_cast<Quantity>(static_cast<int>(fields[1]));
  f.tensor_id = static_cast<int64_t>(fields[2]) * kHalf + static_cast<int64_t>(fields[3]) - 1;
  f.element = static_cast<int64_t>(fields[4]) * kHalf + static_cast<int64_t>(fields[5]) - 1;
  f.value = fields[6];
  f.step = step;
  f.rank = rank;
  return f;
}

}  // namespace

std::string describe(const NonFinite& f, const models::ModelSpec& model) {
  const std::string where = fmt::format("step {}, rank {}", f.step, f.rank);
  if (f.quantity == Quantity::kLoss) return fmt::format("{}: the loss is {}", where, value_text(f.value));
  const models::TensorSpec* tensor = tensor_by_id(model, f.tensor_id);
  const std::string name = tensor ? tensor->name : fmt::format("tensor #{}", f.tensor_id);
  return fmt::format("{}: the {} of {} [{}] is {}", where, quantity_name(f.quantity), name, f.element,
                     value_text(f.value));
}

std::optional<NonFinite> first_non_finite(const UnitShard& shard, const planner::ShardView& view,
                                          std::span<const float> values, Quantity quantity) {
  RAGGED_ASSERT(static_cast<int64_t>(values.size()) >= view.shard_offset + view.elements,
                "a shard-indexed array covers the shard");
  for (int64_t i = 0; i < view.elements; ++i) {
    const float value = values[static_cast<size_t>(view.shard_offset + i)];
    if (!std::isfinite(value)) {
      return NonFinite{quantity, shard.tensor_id(view.tensor), view.tensor_offset + i, value, 0, shard.rank()};
    }
  }
  return std::nullopt;
}

std::optional<NonFinite> first_non_finite(const UnitShard& shard, std::span<const float> values, Quantity quantity) {
  for (const planner::ShardView& view : shard.views()) {
    if (auto found = first_non_finite(shard, view, values, quantity)) return found;
  }
  return std::nullopt;
}

std::optional<NonFinite> first_non_finite(std::span<const float> values, int64_t tensor_id, Quantity quantity) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) return NonFinite{quantity, tensor_id, static_cast<int64_t>(i), values[i], 0, 0};
  }
  return std::nullopt;
}

std::optional<NonFinite> first_non_finite_master(const std::vector<UnitShard>& shards) {
  for (const UnitShard& s : shards) {
    if (auto found = first_non_finite(s, s.master(), Quantity::kParameter)) return found;
  }
  return std::nullopt;
}

std::optional<NonFinite> non_finite_loss(double loss) {
  if (std::isfinite(loss)) return std::nullopt;
  return NonFinite{Quantity::kLoss, -1, -1, static_cast<float>(loss), 0, 0};
}

std::optional<NonFinite> agree_non_finite(const std::optional<NonFinite>& mine, int64_t step, Communicator& world) {
  std::vector<float> all(static_cast<size_t>(world.size()) * kFields, 0.0f);
  const std::array<float, kFields> fields = encode(mine);
  std::copy(fields.begin(), fields.end(), all.begin() + static_cast<std::ptrdiff_t>(world.rank()) * kFields);
  world.all_gather_in_place(all.data(), kFields);
  for (int rank = 0; rank < world.size(); ++rank) {
    const float* slot = &all[static_cast<size_t>(rank) * kFields];
    if (slot[0] != 0.0f) return decode(slot, step, rank);
  }
  return std::nullopt;
}

}  // namespace ragged::backend
