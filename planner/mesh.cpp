#include "planner/mesh.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::planner {

Mesh mesh_of(const scenarios::Training& training) {
  // A training block built by hand may leave the mesh unset: FSDP over the
  // shard group, as a defaulted scenario has it.
  const scenarios::Mesh& m = training.mesh();
  Mesh mesh;
  mesh.tp = std::max(1, m.tp());
  mesh.cp = std::max(1, m.cp());
  mesh.ep = std::max(1, m.ep());
  mesh.dp_shard = m.dp_shard() > 0 ? m.dp_shard() : std::max<int64_t>(1, training.shard_group_size() / mesh.cp);
  mesh.dp_replicate = m.dp_replicate() > 0 ? m.dp_replicate() : std::max(1, training.replicate_group_size());
  mesh.sequence_parallel = !m.has_sequence_parallel() || m.sequence_parallel();
  mesh.pp = std::max(1, m.pp());
  mesh.whole_experts = scenarios::whole_experts(m);
  mesh.vocabulary_parallel = !m.has_vocabulary_parallel() || m.vocabulary_parallel();
  mesh.gathered_logits = mesh.tp > 1 && m.gathered_logits();
  if (m.expert_dispatcher() == scenarios::DEEPEP) mesh.expert_dispatcher = ExpertDispatcher::kDeepEp;
  if (m.expert_routing() == scenarios::CONSECUTIVE) mesh.expert_routing = ExpertRouting::kConsecutive;
  mesh.batch_first = m.sequence_layout() == scenarios::BATCH_FIRST;
  mesh.per_projection_inputs = m.column_input() == scenarios::PER_PROJECTION;
  mesh.merged_input_gathers = training.compiled();
  if (m.tp_overlap() == scenarios::ASYNC_TP) mesh.tp_overlap = TpOverlap::kAsyncTp;
  if (m.tp_overlap() == scenarios::USERBUFFERS) mesh.tp_overlap = TpOverlap::kUserbuffers;
  return mesh;
}

GroupSpan group_span(const Mesh& mesh, Group group) {
  switch (group) {
    case Group::kNone: return {1, 1};
    case Group::kTensor: return {mesh.tp, 1};
    case Group::kContext: return {mesh.cp, mesh.tp};
    case Group::kShard: return {mesh.shard_ranks(), mesh.tp};
    // Whole experts: ep consecutive ranks, tp innermost among them.
    case Group::kExpert: return {mesh.ep, mesh.whole_experts ? 1 : mesh.tp};
    case Group::kExpertShard: return {mesh.expert_shard_ranks(), mesh.ep * (mesh.whole_experts ? 1 : mesh.tp)};
    case Group::kReplicate: return {mesh.dp_replicate, mesh.shard_ranks() * mesh.tp};
    case Group::kPipeline: return {mesh.pp, mesh.stage_ranks()};
  }
  throw InternalError("group_span: unknown group");
}

std::string mesh_text(const Mesh& mesh) {
  if (mesh.fsdp_only()) return "";
  std::vector<std::string> parts;
  if (mesh.tp > 1) parts.push_back(fmt::format("tp {}{}{}", mesh.tp, mesh.sequence_parallel ? "" : " (no sp)",
                                     !mesh.vocabulary_parallel ? ", vocabulary replicated"
                                     : mesh.gathered_logits    ? ", logits gathered"
                                                               : ""));
  if (mesh.cp > 1) parts.push_back(fmt::format("cp {}", mesh.cp));
  parts.push_back(fmt::format("dp_shard {}", mesh.dp_shard));
  if (mesh.dp_replicate > 1) parts.push_back(fmt::format("dp_replicate {}", mesh.dp_replicate));
  if (mesh.pp > 1) parts.push_back(fmt::format("pp {}", mesh.pp));
  std::string text = fmt::format("{}", fmt::join(parts, " x "));
  if (mesh.ep > 1) {
    text += mesh.whole_experts ? fmt::format(" (ep {} of tp x dp_shard x cp, experts whole)", mesh.ep)
                               : fmt::format(" (ep {} of dp_shard x cp)", mesh.ep);
  }
  return text;
}

}  // namespace ragged::planner
