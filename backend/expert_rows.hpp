#pragma once
// Where an experts unit's routed rows travel between the ranks of an
// expert-parallel group of P ranks of L = E / P experts each (docs/MESH.md),
// known without a device so that the GPU executor and the tests share it
// with the host workload (backend/workload_ep.cpp):
//   - a source's routed copies are in expert order, each expert's in token
//     order (route_top_k), so the rows for rank r's experts [r L, (r + 1) L)
//     are one run, local expert by local expert: what the host's "ep
//     dispatch" sends rank r, in its order;
//   - the owner keeps each local expert's rows together, every source's in
//     rank order, so that one expert's GEMMs run on one run of rows;
//   - "ep combine" returns each row to its source in the order it came.
// Between two ranks the blocks of one exchange are sent and received in the
// order listed, so a receiver that knows the counts places every block.

#include <cstdint>
#include <vector>

namespace ragged::backend {

// `rows` rows from row `first` of a buffer go to (or come from) `peer`.
struct RowBlock {
  int peer = 0;
  int64_t first = 0;
  int64_t rows = 0;
  bool operator==(const RowBlock&) const = default;
};

// counts[r x L + j]: a source's copies routed to local expert j of rank r,
// from `offsets` (E + 1: expert e's copies are [offsets[e], offsets[e + 1])).
std::vector<int64_t> expert_row_counts(const std::vector<int64_t>& offsets, int ranks);

// The source's blocks in copy order, rank by rank, local expert by local
// expert (rows at `first` of its copies), from its counts.
std::vector<RowBlock> source_row_blocks(const std::vector<int64_t>& counts, int ranks);

// The owner's blocks from received[s x L + j] (the rows source s sent for
// local expert j), listed source by source and local expert by local expert
// (the order each source sends them), placed expert by expert: local expert
// j's rows of source s follow those of sources s' < s, after every row of
// the local experts before j.
std::vector<RowBlock> owner_row_blocks(const std::vector<int64_t>& received, int ranks);

// Local expert j's rows at the owner (every source's): the first and how many.
struct ExpertRun {
  int64_t first = 0;
  int64_t rows = 0;
};
std::vector<ExpertRun> owner_expert_runs(const std::vector<int64_t>& received, int ranks);

// The most rows an owner can receive: every source's every token routed to
// min(top_k, local) of its experts (a token's top_k experts are distinct;
// routing is dropless).
int64_t owner_row_bound(int ranks, int64_t tokens, int64_t top_k, int64_t local);

}  // namespace ragged::backend
