// Overlapped tensor parallelism in the Program (planner/tp_overlap.hpp): a
// part's gather as steps on the tp stream, its compute in chunks between
// them, its scatter as transfers after the chunks that produce them.
#include <algorithm>

#include "common/errors.hpp"
#include "planner/program_builder_internal.hpp"

namespace ragged::planner::internal {

uint32_t ProgramBuilder::tp_transfer(OpKind kind, int u, int mb, Pass pass, models::UnitPart part, std::string what,
                                     int64_t bytes, int ctas, std::vector<uint32_t> deps) {
  const MeshCollective c{kind, Group::kTensor, bytes, kind == OpKind::kReduceScatter, std::move(what)};
  const uint32_t id = w_.collective(kind, Stream::kTensorParallel, Group::kTensor, u, mb, mesh_label(u, c, pass, part),
                                    bytes, -1, std::move(deps));
  program_.ops[id].part = part;
  program_.ops[id].pass = pass;
  program_.ops[id].ctas = ctas;
  return id;
}

void ProgramBuilder::issue_gather_steps(int u, int mb, Pass pass, models::UnitPart part, int64_t gathered,
                                        const std::vector<uint32_t>& input) {
  const TpOverlapShape shape = tp_overlap_shape(mesh_);
  const int transfers = shape.gather_steps - 1;
  GatherSteps issued{u, mb, pass, part, {}};
  for (int s = 0; s < transfers; ++s) {
    // An all-gather of S / transfers moves S / tp into each rank: one peer's chunk.
    issued.steps.push_back(tp_transfer(OpKind::kAllGather, u, mb, pass, part,
                                       fmt::format("tp all-gather step {}/{}", s + 2, shape.gather_steps),
                                       gathered / transfers, shape.gather_ctas, input));
  }
  gather_steps_.push_back(std::move(issued));
}

uint32_t ProgramBuilder::overlapped_compute(OpKind kind, int u, int mb, Pass pass, models::UnitPart part,
                                            const std::string& name, std::vector<uint32_t> deps, ComputeWork whole,
                                            const TpOverlapSides& sides) {
  const TpOverlapShape shape = tp_overlap_shape(mesh_);
  TpOverlapWork split = split_tp_overlap_work(spec(u), *in_.model, batch_, pass, part, sides, std::move(whole));
  uint32_t last = 0;
  // Transformer Engine launches the GEMMs beside its communication kernels
  // on the SMs those leave (sm_margin).
  const int margin = std::max(shape.gather_ctas, shape.scatter_ctas);
  const auto compute = [&](std::string label, ComputeWork work, std::vector<uint32_t> waits, bool beside = true) {
    last = w_.compute(kind, u, mb, std::move(label), std::move(work), std::move(waits));
    program_.ops[last].part = part;
    if (beside && margin > 0) program_.ops[last].ctas = margin;
    return last;
  };
  if (sides.gathered > 0) {
    const auto it = std::find_if(gather_steps_.begin(), gather_steps_.end(), [&](const GatherSteps& g) {
      return g.unit == u && g.micro_batch == mb && g.pass == pass && g.part == part;
    });
    RAGGED_ASSERT(it != gather_steps_.end(), "an overlapped part's gather steps are issued before its compute");
    const std::vector<uint32_t> steps = std::move(it->steps);
    gather_steps_.erase(it);
    const int chunks = static_cast<int>(steps.size()) + 1;
    const ComputeWork piece = tp_chunk(split.gather_consumers, chunks);
    compute(fmt::format("{} (gathered chunk 1/{})", name, chunks), piece, std::move(deps));
    for (size_t s = 0; s < steps.size(); ++s) {
      compute(fmt::format("{} (gathered chunk {}/{})", name, s + 2, chunks), piece, {steps[s]});
    }
    deps.clear();
  }
  compute(name, std::move(split.rest), std::move(deps), false);
  if (sides.scattered == 0) return last;
  const int chunks = shape.scatter_chunks;
  const int transfers = shape.scatter_local_last ? chunks - 1 : chunks;
  const ComputeWork piece = tp_chunk(split.scatter_producers, chunks);
  std::vector<uint32_t> sent;
  for (int c = 0; c < chunks; ++c) {
    const uint32_t produced = compute(fmt::format("{} (scattered chunk {}/{})", name, c + 1, chunks), piece, {});
    if (c >= transfers) continue;
    // A reduce-scatter of S / transfers moves this chunk's share out of each rank.
    sent.push_back(tp_transfer(OpKind::kReduceScatter, u, mb, pass, part,
                               fmt::format("tp reduce-scatter chunk {}/{}", c + 1, chunks),
                               sides.scattered / transfers, shape.scatter_ctas, {produced}));
  }
  if (!split.beside_scatter.gemms.empty()) compute(name + " (weight gradients)", std::move(split.beside_scatter), {});
  if (shape.local_reduction) {
    compute(name + " (tp partial sums)", tp_local_reduction(sides.scattered, mesh_.tp), sent, false);
  } else {
    mesh_waits_.insert(mesh_waits_.end(), sent.begin(), sent.end());
  }
  return last;
}

}  // namespace ragged::planner::internal
