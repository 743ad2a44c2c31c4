// What both executors share about a mesh, checked without MPI or a GPU: the
// groups every rank splits its communicators by (group_colors.hpp), the
// exchange each mesh op of the Program names (mesh_step.hpp), and which
// meshes `ragged run` accepts on each device (check_launch).

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/group_colors.hpp"
#include "backend/mesh_step.hpp"
#include "backend/run_support.hpp"
#include "common/errors.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

using models::UnitPart;
using planner::Group;

// The ranks of each group of `kind` (by color) in a world of `world` ranks.
std::vector<std::set<int>> groups_of(int world, const planner::Mesh& mesh, int GroupColors::*kind) {
  std::map<int, std::set<int>> by_color;
  for (int rank = 0; rank < world; ++rank) by_color[group_colors(rank, mesh).*kind].insert(rank);
  std::vector<std::set<int>> out;
  for (auto& [color, ranks] : by_color) out.push_back(ranks);
  return out;
}

// docs/MESH.md numbers ranks tp innermost, then cp, dp_shard, dp_replicate.
TEST(GroupColors, TpTimesCpTimesFsdpOnEightRanksFormsTheDocumentedGroups) {
  const planner::Mesh mesh = run_mesh(8, 4, 2, 2);  // tp 2 x cp 2 x dp_shard 2
  EXPECT_EQ(mesh.dp_shard, 2);
  EXPECT_EQ(mesh.dp_replicate, 1);
  using Groups = std::vector<std::set<int>>;
  EXPECT_EQ(groups_of(8, mesh, &GroupColors::tensor), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(groups_of(8, mesh, &GroupColors::context), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(groups_of(8, mesh, &GroupColors::shard), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(groups_of(8, mesh, &GroupColors::replicas), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
}

TEST(GroupColors, HsdpWithTpAndExpertParallelismFormsTheDocumentedGroups) {
  using Groups = std::vector<std::set<int>>;
  // 8 ranks, tp 2, shard groups of 2: 2 replicas of each shard.
  const planner::Mesh hsdp = run_mesh(8, 2, 2);
  EXPECT_EQ(hsdp.dp_replicate, 2);
  EXPECT_EQ(groups_of(8, hsdp, &GroupColors::shard), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(groups_of(8, hsdp, &GroupColors::replicas), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // tp 2 x dp_shard 4 x ep 2: ep groups of 2 places at the same tp rank,
  // the experts sharded over the places at the same place in their ep group.
  const planner::Mesh ep = run_mesh(8, 4, 2, 1, 2);
  EXPECT_EQ(groups_of(8, ep, &GroupColors::expert), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(groups_of(8, ep, &GroupColors::expert_shard), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(GroupColors, EveryGroupHasTheSpansMembersStrideApart) {
  const planner::Mesh mesh = run_mesh(16, 4, 2, 2, 2);  // 2 replicas
  for (const auto& [group, kind] : std::vector<std::pair<Group, int GroupColors::*>>{
           {Group::kTensor, &GroupColors::tensor},
           {Group::kContext, &GroupColors::context},
           {Group::kShard, &GroupColors::shard},
           {Group::kReplicate, &GroupColors::replicas},
           {Group::kExpert, &GroupColors::expert},
           {Group::kExpertShard, &GroupColors::expert_shard}}) {
    const planner::GroupSpan span = planner::group_span(mesh, group);
    for (const std::set<int>& ranks : groups_of(16, mesh, kind)) {
      ASSERT_EQ(static_cast<int64_t>(ranks.size()), span.members) << planner::group_name(group);
      const int first = *ranks.begin();
      int i = 0;
      for (int rank : ranks) EXPECT_EQ(rank, first + i++ * span.stride) << planner::group_name(group);
    }
  }
}

planner::Op mesh_op(planner::OpKind kind, Group group, UnitPart part, planner::Pass pass) {
  planner::Op op;
  op.kind = kind;
  op.group = group;
  op.part = part;
  op.pass = pass;
  op.name = "a mesh op";
  return op;
}

TEST(MeshStep, EachMeshOpNamesTheExchangeBothExecutorsRun) {
  using planner::OpKind;
  using planner::Pass;
  const TpStep gather = tensor_parallel_step(mesh_op(OpKind::kAllGather, Group::kTensor, UnitPart::kMlp, Pass::kBackward), 3, false);
  EXPECT_EQ(gather.unit, 3);
  EXPECT_EQ(gather.part, UnitPart::kMlp);
  EXPECT_EQ(gather.pass, TpPass::kBackward);
  EXPECT_EQ(gather.collective, TpCollective::kAllGather);
  EXPECT_FALSE(sums_partials(gather.collective));
  const TpStep scatter =
      tensor_parallel_step(mesh_op(OpKind::kReduceScatter, Group::kTensor, UnitPart::kAttention, Pass::kRecompute), 1, false);
  EXPECT_EQ(scatter.pass, TpPass::kAgain);
  EXPECT_TRUE(sums_partials(scatter.collective));
  EXPECT_EQ(tensor_parallel_step(mesh_op(OpKind::kAllReduce, Group::kTensor, UnitPart::kWhole, Pass::kForward), 5, true)
                .collective,
            TpCollective::kLossStats);
  EXPECT_EQ(tensor_parallel_step(mesh_op(OpKind::kAllGather, Group::kContext, UnitPart::kAttentionCore, Pass::kForward), 1,
                                 false)
                .collective,
            TpCollective::kKeyValueGather);
  const TpStep kv_grads = tensor_parallel_step(
      mesh_op(OpKind::kReduceScatter, Group::kContext, UnitPart::kAttentionCore, Pass::kBackward), 1, false);
  EXPECT_EQ(kv_grads.collective, TpCollective::kKeyValueGradientScatter);
  EXPECT_TRUE(sums_partials(kv_grads.collective));
  // An all-reduce of activations (sequence parallelism off) is no exchange of the workloads.
  EXPECT_THROW(tensor_parallel_step(mesh_op(OpKind::kAllReduce, Group::kTensor, UnitPart::kMlp, Pass::kForward), 2, false),
               InternalError);
  EXPECT_THROW(tensor_parallel_step(mesh_op(OpKind::kAllGather, Group::kShard, UnitPart::kWhole, Pass::kForward), 2, false),
               InternalError);
}

// docs/MESH.md's table: a part gathers its input before it and
// reduce-scatters its partial output after it, except around cp's exchange.
TEST(MeshStep, PartsHaveTheirExchangesWhereTheProgramPutsThem) {
  for (bool backward : {false, true}) {
    EXPECT_TRUE(gathers_before(UnitPart::kAttention, backward));
    EXPECT_TRUE(scatters_after(UnitPart::kAttention, backward));
    EXPECT_TRUE(gathers_before(UnitPart::kMlp, backward));
    EXPECT_TRUE(scatters_after(UnitPart::kMlp, backward));
  }
  EXPECT_TRUE(gathers_before(UnitPart::kAttentionInput, false));
  EXPECT_FALSE(scatters_after(UnitPart::kAttentionInput, false));
  EXPECT_FALSE(gathers_before(UnitPart::kAttentionCore, false));
  EXPECT_TRUE(scatters_after(UnitPart::kAttentionCore, false));
  EXPECT_TRUE(gathers_before(UnitPart::kAttentionCore, true));
  EXPECT_FALSE(scatters_after(UnitPart::kAttentionCore, true));
  EXPECT_FALSE(gathers_before(UnitPart::kAttentionInput, true));
  EXPECT_TRUE(scatters_after(UnitPart::kAttentionInput, true));
}

TEST(MeshStep, ATpRankKeepsItsVocabularyRowsIds) {
  EXPECT_EQ(local_vocabulary_id(0, 0, 256), 0);
  EXPECT_EQ(local_vocabulary_id(255, 0, 256), 255);
  EXPECT_EQ(local_vocabulary_id(256, 0, 256), -1);
  EXPECT_EQ(local_vocabulary_id(256, 1, 256), 0);
  EXPECT_EQ(local_vocabulary_id(511, 1, 256), 255);
  EXPECT_EQ(local_vocabulary_id(255, 1, 256), -1);
}

planner::ResolvedScenario with_mesh(int gpus, int tp, int cp, int ep, const std::string& model = "tiny-llama-4xcpu") {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(model), gpus);
  loaded.written.mutable_training()->mutable_mesh()->set_tp(tp);
  loaded.written.mutable_training()->mutable_mesh()->set_cp(cp);
  loaded.written.mutable_training()->mutable_mesh()->set_ep(ep);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

std::string launch_error(const planner::ResolvedScenario& resolved, bool host) {
  const std::unique_ptr<Communicator> one = make_local_communicator();
  try {
    check_launch(resolved, *one, host);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The GPU runs tp, cp and ep, tp with cp or with ep; past the mesh checks
// the one process launched is what check_launch finds wrong. cp with ep is
// refused by name on either device.
TEST(CheckLaunch, TheGpuAcceptsTensorContextAndExpertParallelismAndRefusesCpWithEpByName) {
  for (const auto& [tp, cp] : std::vector<std::pair<int, int>>{{2, 1}, {1, 2}, {2, 2}}) {
    const std::string accepted = launch_error(with_mesh(4, tp, cp, 1), false);
    EXPECT_NE(accepted.find("has 4 GPUs but 1 process run"), std::string::npos) << accepted;
  }
  for (const int tp : {1, 2}) {
    const std::string experts = launch_error(with_mesh(4, tp, 1, 2, "tiny-moe-4xcpu"), false);
    EXPECT_NE(experts.find("has 4 GPUs but 1 process run"), std::string::npos) << experts;
  }
  const std::string refused = launch_error(with_mesh(8, 1, 2, 2, "tiny-moe-4xcpu"), false);
  EXPECT_NE(refused.find("training.mesh: "), std::string::npos) << refused;
  EXPECT_NE(refused.find("tp with cp or with ep but not cp with ep"), std::string::npos) << refused;
  EXPECT_NE(refused.find("set cp or ep to 1 and pp to 1"), std::string::npos) << refused;
  const std::string host = launch_error(with_mesh(8, 1, 2, 2, "tiny-moe-4xcpu"), true);
  EXPECT_NE(host.find("(not all three)"), std::string::npos) << host;
}

}  // namespace
}  // namespace ragged::backend
