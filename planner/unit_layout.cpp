#include "planner/unit_layout.hpp"

#include <algorithm>

namespace ragged::planner {

std::vector<int64_t> per_tensor_pieces(const UnitLayout& layout, int64_t element_bytes, bool skip_persistent) {
  const int64_t chunks = layout.placement == Placement::kRankMajor ? layout.ranks : 1;
  std::vector<int64_t> pieces;
  pieces.reserve(layout.slots.size());
  for (const TensorSlot& slot : layout.slots) {
    if (!(skip_persistent && slot.persistent)) pieces.push_back(slot.length * chunks * element_bytes);
  }
  return pieces;
}

namespace {

std::vector<int> tensors_in_groups(const UnitLayout& layout, bool alone) {
  std::vector<int> tensors;
  for (const std::vector<int>& group : layout.fetch_groups) {
    if ((group.size() == 1) == alone) tensors.insert(tensors.end(), group.begin(), group.end());
  }
  std::sort(tensors.begin(), tensors.end());
  return tensors;
}

}  // namespace

std::vector<int> tensors_gathered_alone(const UnitLayout& layout) { return tensors_in_groups(layout, true); }
std::vector<int> tensors_gathered_coalesced(const UnitLayout& layout) { return tensors_in_groups(layout, false); }

int64_t group_shard_elements(const UnitLayout& layout, const std::vector<int>& tensors) {
  int64_t elements = 0;
  for (int t : tensors) elements += layout.slots[static_cast<size_t>(t)].length;
  return elements;
}

int64_t tensor_count(const UnitLayout& layout, bool gathered_only) {
  int64_t n = 0;
  for (const TensorSlot& slot : layout.slots) n += gathered_only && slot.persistent ? 0 : 1;
  return n;
}

}  // namespace ragged::planner
