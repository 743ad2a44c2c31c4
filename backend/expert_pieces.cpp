#include "backend/expert_pieces.hpp"

#include <charconv>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::backend {
namespace {

// "…experts.12.…": where the index starts and its value; npos when the name has none.
struct ExpertIndex {
  size_t at = std::string::npos;
  size_t length = 0;
  int64_t value = -1;
};

ExpertIndex expert_index(std::string_view name) {
  constexpr std::string_view kMarker = "experts.";
  const size_t marker = name.find(kMarker);
  if (marker == std::string_view::npos) return {};
  // "shared_experts." is a block's own tensor.
  if (marker > 0 && name[marker - 1] == '_') return {};
  ExpertIndex out;
  out.at = marker + kMarker.size();
  const char* begin = name.data() + out.at;
  const auto [end, error] = std::from_chars(begin, name.data() + name.size(), out.value);
  if (error != std::errc() || end == begin || *end != '.') return {};
  out.length = static_cast<size_t>(end - begin);
  return out;
}

}  // namespace

std::vector<std::vector<TensorOrigin>> tensor_origins(const models::ModelSpec& whole, const models::ModelSpec& split,
                                                      int ep_rank) {
  std::unordered_map<std::string_view, TensorOrigin> by_name;
  int64_t id = 0;
  for (const models::UnitSpec& unit : whole.units) {
    for (const models::TensorSpec& t : unit.tensors) by_name.emplace(t.name, TensorOrigin{id++, &t, 0});
  }
  const int64_t local = split.arch.experts / split.split.ep;
  std::vector<std::vector<TensorOrigin>> out;
  for (const models::UnitSpec& unit : split.units) {
    std::vector<TensorOrigin>& origins = out.emplace_back();
    for (const models::TensorSpec& t : unit.tensors) {
      std::string name = t.name;
      int64_t first = 0;
      if (unit.kind == models::UnitKind::kExperts) {
        const ExpertIndex index = expert_index(name);
        if (index.value >= 0) {
          name.replace(index.at, index.length, std::to_string(ep_rank * local + index.value));
        } else {
          first = ep_rank * t.numel();  // fused: this rank's rows of the whole tensor
        }
      }
      const auto it = by_name.find(name);
      RAGGED_ASSERT(it != by_name.end(), fmt::format("tensor_origins: {} (as {}) is not a tensor of the whole model",
                                                     t.name, name));
      origins.push_back(TensorOrigin{it->second.id, it->second.whole, first});
      RAGGED_ASSERT(first + t.numel() <= it->second.whole->numel(), "tensor_origins: a piece inside its whole tensor");
    }
  }
  return out;
}

ExpertSlices expert_slices(const models::TensorSpec& whole, const models::ArchConfig& arch) {
  if (whole.role != models::TensorRole::kExpert) return {};
  const ExpertIndex index = expert_index(whole.name);
  if (index.value >= 0) return {index.value, 1};
  RAGGED_ASSERT(!whole.shape.empty() && whole.shape.front() == arch.experts,
                "expert_slices: a fused experts tensor leads with the experts");
  return {0, arch.experts};
}

}  // namespace ragged::backend
