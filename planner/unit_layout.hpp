#pragma once
// A strategy's answer for one unit: the shard size S and where every tensor
// lives in the global buffer of m*S elements. Two placements exist:
//  - contiguous (ragged, vescale-paper, FSDP1, Megatron-FSDP): tensor t is the
//    interval [offset, offset + e_t) of the gathered buffer, so its unsharded
//    view is zero-copy; rank k owns [k*S, (k+1)*S);
//  - rank-major (FSDP2, ZeRO-3): every rank's shard holds one padded chunk of
//    every tensor at the same `offset`; the gathered buffer is [m][S] and the
//    tensor must be copied out of it.

#include <cstdint>
#include <string>
#include <vector>

namespace ragged::planner {

enum class Placement { kContiguous, kRankMajor };

// How a rank-major strategy splits a tensor across ranks.
enum class ChunkRule {
  kDim0Rows,  // torch.chunk over dim 0: ceil(dim0/m) rows per rank (FSDP2 Shard(0))
  kElements,  // ceil(e/m) elements per rank (ZeRO-3)
};

struct TensorSlot {
  int64_t offset = 0;  // contiguous: l_t in [0, m*S); rank-major: offset inside each rank's shard
  int64_t length = 0;  // contiguous: e_t; rank-major: the padded per-rank chunk in elements
  bool persistent = false;  // ZeRO-3: a small parameter kept gathered between uses
};

// Elements each collective copies besides the collective itself (each copy
// reads and writes that many elements). Casts between dtypes are not here:
// every strategy casts its shard the same way (see the Program).
struct CopyElements {
  int64_t all_gather_in = 0;       // into the all-gather input (FSDP2, ZeRO-3 copy-in)
  int64_t all_gather_out = 0;      // out of the gathered buffer into per-tensor storage
  int64_t reduce_scatter_in = 0;   // packing gradients into the reduce-scatter input
  int64_t reduce_scatter_out = 0;  // unpacking the reduced shard
};

struct UnitLayout {
  int64_t shard_size = 0;              // S, elements per rank
  int64_t ranks = 1;                   // m
  Placement placement = Placement::kContiguous;
  ChunkRule chunk_rule = ChunkRule::kElements;  // rank-major only
  std::vector<TensorSlot> slots;       // one per tensor, in problem order
  int64_t lower_bound_shard_size = 0;  // the smallest S any contiguous layout could have (planner/lower_bound)
  bool honours_granularity = true;     // every shard cut inside a tensor falls on a granule boundary
  bool aligned_shards = true;          // S is a multiple of the collective alignment (FSDP1/FSDP2/ZeRO-3 may not be)
  int64_t persistent_elements = 0;     // ZeRO-3: small parameters kept gathered between uses
  int64_t persistent_shard_elements = 0;  // their chunks in each rank's shard (not all-gathered again)
  CopyElements copies;
  // ZeRO-3: the gathered tensors by the collective that fetches them, in
  // order (planner/zero3_fetch.hpp). A group of one tensor is gathered
  // straight into its storage; the tensors of larger groups through a flat
  // buffer and a copy-out (CopyElements counts those). Empty: one collective
  // gathers the unit.
  std::vector<std::vector<int>> fetch_groups;

  int64_t padded_elements() const { return shard_size * ranks; }
};

// One allocation per tensor, each padded to its rank-major chunks (the tensor
// itself in a contiguous layout); ZeRO-3's persistent parameters are left out
// when `skip_persistent` (they are not gathered, so they have no copy).
std::vector<int64_t> per_tensor_pieces(const UnitLayout& layout, int64_t element_bytes, bool skip_persistent);
// The tensors ZeRO-3 gathers straight into their own storage, one
// collective each (fetch groups of one tensor), and those it gathers through
// a flat buffer, in slot order.
std::vector<int> tensors_gathered_alone(const UnitLayout& layout);
std::vector<int> tensors_gathered_coalesced(const UnitLayout& layout);
// The elements of the given tensors in each rank's shard (their chunks).
int64_t group_shard_elements(const UnitLayout& layout, const std::vector<int>& tensors);

// The unit's parameters (tensors); without ZeRO-3's persistent ones when
// `gathered_only` (they are not fetched).
int64_t tensor_count(const UnitLayout& layout, bool gathered_only);

}  // namespace ragged::planner
