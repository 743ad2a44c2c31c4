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
// The share of a dispatch's (and combine's) bytes to other nodes that
// crosses the network, when ranks_per_node consecutive ranks of the ep group
// share a node: DeepEP sends a token once over RDMA to each node holding
// one of its experts, to the GPU of the sender's local index there, which
// forwards it over NVLink to the ranks that need it (DeepSeek-V3 technical
// report, section 3.2.2; deepseek-ai/DeepEP's internode kernels): the nodes
// a token reaches over the ranks it reaches. 1 for kAllToAll (a copy per
// token and expert) and for a group inside one node or one rank a node.
double expert_network_share(int64_t experts, int64_t top_k, const Mesh& mesh, int64_t ranks_per_node);

}  // namespace ragged::planner
