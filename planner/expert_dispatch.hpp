#pragma once
// What expert parallelism's dispatch sends: copies of each token's hidden
// state, one per (token, expert) pair with an all-to-all of the permuted
// tokens, one per (token, destination rank) with DeepEP, whose dispatch
// sends a token once to every rank holding one of its experts and whose
// combine sums a rank's expert outputs before sending them back
// (docs/MESH.md, "Expert parallelism").

#include <cstdint>

#include "planner/mesh.hpp"

namespace ragged::planner {

// Ranks of an ep group holding at least one of a token's top_k experts, on
// average over the tokens: experts split in ep contiguous runs of E / ep.
//  - uniform: top_k distinct experts drawn at random, each rank missed with
//    probability C(E - E/ep, k) / C(E, k);
//  - consecutive: token i picks experts (i k + j) mod E, j < k (NeMo
//    Automodel's FakeBalancedGate), averaged over i < E (the pattern's period
//    divides E).
double expert_ranks_per_token(int64_t experts, int64_t top_k, int64_t ep, ExpertRouting routing);

// Copies of one token's hidden state the dispatch sends over the ep group
// (and the combine returns): top_k for kAllToAll, the ranks per token for
// kDeepEp. A token's copy to its own rank moves nothing; the collective's
// flows leave that share out.
double expert_dispatch_copies(int64_t experts, int64_t top_k, const Mesh& mesh);

}  // namespace ragged::planner
