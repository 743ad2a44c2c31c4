// One expert-parallel rank's experts units (docs/MESH.md, docs/BACKEND.md).
// A mixture-of-experts block whose routed experts are a unit of their own
// computes its attention, router, top-k and shared experts; the experts
// unit then runs, for the group's P ranks of L = E / P experts each:
//   dispatch  each routed (token, choice) row of n2 to the rank of its
//             expert e (rank e / L), in (expert, token) order, its local
//             index e % L in front;
//   experts   on each rank, per source rank and local expert, the SwiGLU
//             over that source's rows: the same GEMM, on the same rows, as
//             the source would run with every expert at home;
//   combine   the outputs back, in the order they came; the source adds
//             gate x y over experts in expert order, then the shared
//             experts' output and the residual, as moe_forward does.
// The backward mirrors it: each row's output gradient (gate x dout) to the
// expert's rank, the experts' backward there (weight gradients summed over
// the source ranks in rank order), the input gradients back, added in
// expert order; the block's backward finishes the gates, the shared experts
// and the router.

#include <algorithm>

#include <fmt/format.h>

#include "backend/workload_state.hpp"

namespace ragged::backend {

using detail::Buf;

namespace {

int pass_index(TpPass pass) { return static_cast<int>(pass); }

// The gradient of an experts unit's output over every token: its own (a tp
// rank's: every rank's rows, gathered before the unit's backward).
const float* output_gradient_of_experts(const HostWorkload::State& s, size_t unit) {
  if (s.tp.size == 1) return s.grad.data();
  const Buf& gathered = s.tp_units[unit].grad_gathered;
  RAGGED_ASSERT(static_cast<int64_t>(gathered.size()) == s.dims.tokens * s.dims.hidden,
                "host workload: the experts' output gradient is gathered before their backward");
  return gathered.data();
}

}  // namespace

void HostWorkload::experts_forward(int unit, const ConstTensors& params) {
  State& s = *state_;
  const auto u = static_cast<size_t>(unit);
  const detail::ExpertsLayout& lay = s.experts[u];
  EpUnitState& st = s.ep_units[u];
  for (std::vector<detail::GluCache>& source : st.owned) {
    for (size_t j = 0; j < source.size(); ++j) {
      if (source[j].x.empty()) continue;
      detail::glu_forward(s.ctx, detail::routed_weights(lay.routed, s.dims.hidden, static_cast<int64_t>(j), params, nullptr),
                          source[j]);
    }
  }
}

void HostWorkload::experts_backward(int unit, const ConstTensors& params, const Tensors& grads) {
  State& s = *state_;
  const auto u = static_cast<size_t>(unit);
  const detail::ExpertsLayout& lay = s.experts[u];
  EpUnitState& st = s.ep_units[u];
  const int64_t h = s.dims.hidden;
  st.owned_dx.assign(st.owned.size(), std::vector<Buf>(static_cast<size_t>(lay.local)));
  for (size_t source = 0; source < st.owned.size(); ++source) {
    for (size_t j = 0; j < st.owned[source].size(); ++j) {
      const detail::GluCache& c = st.owned[source][j];
      if (c.x.empty()) continue;
      Buf& dx = st.owned_dx[source][j];
      dx.resize(c.x.size());
      detail::glu_backward(s.ctx, detail::routed_weights(lay.routed, h, static_cast<int64_t>(j), params, &grads), c,
                           st.owned_dy[source][j].data(), dx.data());
    }
  }
}

EpExchange HostWorkload::ep_begin(const EpStep& step) {
  State& s = *state_;
  RAGGED_ASSERT(s.ep.size > 1 && step.unit > 0 && step.unit < s.units() &&
                    s.model.units[static_cast<size_t>(step.unit)].kind == models::UnitKind::kExperts,
                "host workload: an expert-parallel exchange of an experts unit");
  const auto u = static_cast<size_t>(step.unit);
  EpUnitState& st = s.ep_units[u];
  const detail::BlockCache& block = s.caches[u - 1];
  const detail::MoeCache& moe = block.moe;
  const int64_t h = s.dims.hidden;
  const int ranks = s.ep.size;
  const int64_t local = s.experts[u].local;
  const bool second = st.second[pass_index(step.pass)];
  EpExchange x;
  x.send_counts.assign(static_cast<size_t>(ranks), 0);
  x.recv = &st.recv;
  x.recv_counts = &st.recv_counts;
  if (step.pass == TpPass::kAgain) {  // the forward's rows again
    x.send = second ? st.combined.data() : st.dispatched.data();
    x.send_counts = second ? st.combined_counts : st.dispatched_counts;
    x.recv = &st.again;
    x.recv_counts = &st.again_counts;
    return x;
  }
  st.send.clear();
  if (!second) {
    // This rank's rows to each expert's rank: n2 rows forward (the local
    // expert index in front), gate x dout backward.
    std::vector<Buf> dy;
    if (step.pass == TpPass::kBackward) {
      RAGGED_ASSERT(s.grad_unit == step.unit, "host workload: the experts unit's backward follows the next unit's");
      detail::moe_routed_gradients(s.blocks[u - 1].experts, moe, h, output_gradient_of_experts(s, u), dy,
                                   s.caches[u - 1].dgates);
    }
    for (int r = 0; r < ranks; ++r) {
      const size_t before = st.send.size();
      for (int64_t e = r * local; e < (r + 1) * local; ++e) {
        const detail::GluCache& c = moe.routed[static_cast<size_t>(e)];
        for (size_t i = 0; i < c.rows.size(); ++i) {
          if (step.pass == TpPass::kForward) {
            st.send.push_back(static_cast<float>(e - r * local));
            const float* row = block.n2.data() + c.rows[i] * h;
            st.send.insert(st.send.end(), row, row + h);
          } else {
            const float* row = dy[static_cast<size_t>(e)].data() + static_cast<int64_t>(i) * h;
            st.send.insert(st.send.end(), row, row + h);
          }
        }
      }
      x.send_counts[static_cast<size_t>(r)] = static_cast<int64_t>(st.send.size() - before);
    }
    if (step.pass == TpPass::kForward) {
      st.dispatched = st.send;
      st.dispatched_counts = x.send_counts;
    }
  } else {
    // The experts' outputs (forward) or input gradients (backward) back to
    // each source, in the order its rows came.
    for (size_t source = 0; source < st.owned.size(); ++source) {
      const size_t before = st.send.size();
      for (size_t j = 0; j < st.owned[source].size(); ++j) {
        const Buf& rows = step.pass == TpPass::kForward ? st.owned[source][j].y : st.owned_dx[source][j];
        st.send.insert(st.send.end(), rows.begin(), rows.end());
      }
      x.send_counts[source] = static_cast<int64_t>(st.send.size() - before);
    }
    if (step.pass == TpPass::kForward) {
      st.combined = st.send;
      st.combined_counts = x.send_counts;
    }
  }
  x.send = st.send.data();
  return x;
}

void HostWorkload::ep_end(const EpStep& step) {
  State& s = *state_;
  const auto u = static_cast<size_t>(step.unit);
  EpUnitState& st = s.ep_units[u];
  bool& second = st.second[pass_index(step.pass)];
  const bool was_second = second;
  second = !second;
  if (step.pass == TpPass::kAgain) return;
  detail::BlockCache& block = s.caches[u - 1];
  detail::MoeCache& moe = block.moe;
  const int64_t h = s.dims.hidden;
  const int ranks = s.ep.size;
  const int64_t local = s.experts[u].local;
  RAGGED_ASSERT(static_cast<int>(st.recv_counts.size()) == ranks, "host workload: an exchange over the ep group");
  const float* in = st.recv.data();
  if (!was_second) {
    // On the experts' rank: each source's rows, per local expert in order.
    if (step.pass == TpPass::kForward) {
      st.owned.assign(static_cast<size_t>(ranks), std::vector<detail::GluCache>(static_cast<size_t>(local)));
    } else {
      st.owned_dy.assign(static_cast<size_t>(ranks), std::vector<Buf>(static_cast<size_t>(local)));
    }
    for (int source = 0; source < ranks; ++source) {
      const int64_t count = st.recv_counts[static_cast<size_t>(source)];
      if (step.pass == TpPass::kForward) {
        RAGGED_ASSERT(count % (h + 1) == 0, "host workload: dispatched rows hold an expert index and a hidden state");
        for (const float* row = in; row < in + count; row += h + 1) {
          const auto j = static_cast<int64_t>(row[0]);
          RAGGED_ASSERT(j >= 0 && j < local, fmt::format("host workload: a row for local expert {} of {}", j, local));
          Buf& x = st.owned[static_cast<size_t>(source)][static_cast<size_t>(j)].x;
          x.insert(x.end(), row + 1, row + 1 + h);
        }
      } else {
        // The output gradients come in the order the rows were dispatched.
        const float* row = in;
        for (int64_t j = 0; j < local; ++j) {
          const size_t n = st.owned[static_cast<size_t>(source)][static_cast<size_t>(j)].x.size();
          st.owned_dy[static_cast<size_t>(source)][static_cast<size_t>(j)].assign(row, row + n);
          row += n;
        }
        RAGGED_ASSERT(row == in + count, "host workload: output gradients for every dispatched row");
      }
      in += count;
    }
    return;
  }
  // Back home: each expert's rows came from its rank in (expert, token) order.
  std::vector<Buf> dx;
  if (step.pass == TpPass::kBackward) dx.resize(static_cast<size_t>(s.blocks[u - 1].experts.experts));
  for (int r = 0; r < ranks; ++r) {
    const float* row = in;
    for (int64_t e = r * local; e < (r + 1) * local; ++e) {
      const size_t n = moe.routed[static_cast<size_t>(e)].rows.size() * static_cast<size_t>(h);
      Buf& into = step.pass == TpPass::kForward ? moe.routed[static_cast<size_t>(e)].y : dx[static_cast<size_t>(e)];
      into.assign(row, row + n);
      row += n;
    }
    RAGGED_ASSERT(row == in + st.recv_counts[static_cast<size_t>(r)], "host workload: every row of an expert comes back");
    in = row;
  }
  const int64_t size = s.dims.tokens * h;
  if (step.pass == TpPass::kForward) {
    // Under tp the sum is a partial one (the rank's expert columns), which
    // the tp group's reduce-scatter adds into each rank's rows of x2.
    Buf& out = s.tp.size > 1 ? s.tp_units[u].partial : block.mlp_out;
    out.resize(static_cast<size_t>(size));
    detail::moe_combine(s.blocks[u - 1].experts, moe, s.dims.tokens, h, out.data());
    if (s.tp.size > 1) return;
    s.acts[u].resize(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) s.acts[u][static_cast<size_t>(i)] = block.x1[static_cast<size_t>(i)] + out[static_cast<size_t>(i)];
    return;
  }
  block.dn2_routed.assign(static_cast<size_t>(size), 0.0f);
  for (size_t e = 0; e < dx.size(); ++e) {
    if (!moe.routed[e].rows.empty()) detail::add_expert_rows(moe.routed[e], h, dx[e].data(), block.dn2_routed.data());
  }
  s.grad_unit = step.unit - 1;  // the block's backward reads the same output gradient
}

}  // namespace ragged::backend
