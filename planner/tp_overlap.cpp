#include "planner/tp_overlap.hpp"

#include <algorithm>
#include <vector>

#include "planner/mesh_collectives.hpp"

namespace ragged::planner {
namespace {

// Moves one GEMM equal to `g` from `from` to `to`, if `from` has one (ZB-H1's
// input pass leaves the weight gradients for later).
void move_gemm(const Gemm& g, ComputeWork& from, ComputeWork& to) {
  const auto it = std::find_if(from.gemms.begin(), from.gemms.end(), [&](const Gemm& x) {
    return x.m == g.m && x.n == g.n && x.k == g.k && x.count == g.count && x.weight_gradient == g.weight_gradient;
  });
  if (it == from.gemms.end()) return;
  to.gemms.push_back(*it);
  from.gemms.erase(it);
}

enum class Role { kNone, kColumn, kRow };

// The role of each of the unit's GEMMs in `part` (kNone outside it): the
// last tp-cut GEMM writing the hidden width is the part's row-parallel
// projection, the other tp-cut ones reading the hidden width its
// column-parallel ones. By position and width, not by which dimension of
// the stored weight was cut: a GPT-2 form stores its weights transposed
// (Conv1D), and at FFN 4h over tp 4 both MLP matrices are h x h.
std::vector<Role> roles(const models::UnitSpec& unit, const models::ModelSpec& model, models::UnitPart part) {
  const std::vector<models::GemmShape>& gemms = unit.compute.gemms;
  std::vector<Role> out(gemms.size(), Role::kNone);
  const auto cut = [&](size_t i) {
    return in_part(gemms[i].part, part) && !gemms[i].routed_experts &&
           gemm_tp_cut(unit, gemms[i]) != models::TensorCut::kWhole;
  };
  size_t row = gemms.size();
  for (size_t i = 0; i < gemms.size(); ++i) {
    if (cut(i) && gemms[i].n == model.arch.hidden) row = i;
  }
  for (size_t i = 0; i < gemms.size(); ++i) {
    if (i == row) {
      out[i] = Role::kRow;
    } else if (cut(i) && gemms[i].k == model.arch.hidden) {
      out[i] = Role::kColumn;
    }
  }
  return out;
}

}  // namespace

TpOverlapShape tp_overlap_shape(const Mesh& mesh) {
  const int tp = static_cast<int>(mesh.tp);
  switch (mesh.tp_overlap) {
    case TpOverlap::kAsyncTp: return {tp, tp, true, 0, 0, true};
    case TpOverlap::kUserbuffers: return {tp, 4, false, 1, 16, false};
    case TpOverlap::kNone: break;
  }
  return {};
}

TpOverlapSides tp_overlap_sides(const models::UnitSpec& unit, const models::ModelSpec& model, const Mesh& mesh,
                                const MicroBatch& batch, int64_t element_bytes, Pass pass, models::UnitPart part) {
  TpOverlapSides sides;
  if (mesh.tp_overlap == TpOverlap::kNone || mesh.tp == 1 || !mesh.sequence_parallel) return sides;
  if (pass == Pass::kSelectiveRecompute || unit.kind != models::UnitKind::kBlock || has_router(unit)) return sides;
  int64_t gathered = 0;
  int64_t scattered = 0;
  for (const MeshCollective& c : mesh_collectives(unit, model, mesh, batch, element_bytes, pass, part)) {
    if (c.group != Group::kTensor) return sides;  // a part with cp or ep collectives runs whole
    if (c.kind == OpKind::kAllGather && !c.after_compute) {
      gathered += c.bytes;
    } else if (c.kind == OpKind::kReduceScatter && c.after_compute) {
      scattered += c.bytes;
    } else {
      return sides;
    }
  }
  // Forward: column-parallel GEMMs read the gathered input, row-parallel ones
  // produce the sums; backward: the other way round.
  const std::vector<Role> role = roles(unit, model, part);
  const bool columns = std::find(role.begin(), role.end(), Role::kColumn) != role.end();
  const bool rows = std::find(role.begin(), role.end(), Role::kRow) != role.end();
  const bool backward = pass == Pass::kBackward;
  if (backward ? rows : columns) sides.gathered = gathered;
  if (backward ? columns : rows) sides.scattered = scattered;
  return sides;
}

TpOverlapWork split_tp_overlap_work(const models::UnitSpec& unit, const models::ModelSpec& model,
                                    const MicroBatch& batch, Pass pass, models::UnitPart part,
                                    const TpOverlapSides& sides, ComputeWork whole) {
  TpOverlapWork out;
  const std::vector<Role> role = roles(unit, model, part);
  for (size_t i = 0; i < role.size(); ++i) {
    if (role[i] == Role::kNone) continue;
    const models::GemmShape& g = unit.compute.gemms[i];
    const int64_t m = gemm_rows(g, batch);
    const bool column = role[i] == Role::kColumn;
    if (pass != Pass::kBackward) {
      const Gemm forward{m, g.n, g.k, g.count};
      if (column && sides.gathered > 0) move_gemm(forward, whole, out.gather_consumers);
      if (!column && sides.scattered > 0) move_gemm(forward, whole, out.scatter_producers);
      continue;
    }
    const Gemm input_gradient{m, g.k, g.n, g.count};
    const Gemm weight_gradient{g.n, g.k, m, g.count, true};
    // The row-parallel weight gradient (dY^T X) reads the gathered gradient
    // transposed: neither runtime fuses it with the gather, so it runs whole
    // once the gather is complete.
    if (!column && sides.gathered > 0) move_gemm(input_gradient, whole, out.gather_consumers);
    if (column && sides.scattered > 0) {
      move_gemm(input_gradient, whole, out.scatter_producers);
      move_gemm(weight_gradient, whole, out.beside_scatter);
    }
  }
  out.rest = std::move(whole);
  return out;
}

ComputeWork tp_chunk(const ComputeWork& gemms, int chunks) {
  ComputeWork piece;
  const auto cut = [chunks](int64_t tokens) { return std::max<int64_t>(1, (tokens + chunks - 1) / chunks); };
  for (Gemm g : gemms.gemms) {
    (g.weight_gradient ? g.k : g.m) = cut(g.weight_gradient ? g.k : g.m);
    piece.gemms.push_back(g);
  }
  return piece;
}

ComputeWork tp_local_reduction(int64_t scattered, int64_t tp) {
  ComputeWork work;
  work.elementwise_bytes = static_cast<double>(scattered) * (1.0 + 1.0 / static_cast<double>(tp));
  work.elementwise_kernels = 1;
  return work;
}

}  // namespace ragged::planner
