// The reference of a tensor-parallel run (reference.hpp): each data-parallel
// rank's micro-batch computed by its tp group's ranks in one process, their
// exchanges written out from the math of Megatron's sequence-parallel block
// (not read from a Program), so that a run matching it bit for bit ran its
// Program's parts and collectives in an order that computes the same sums.

#include <cstring>
#include <memory>
#include <vector>

#include "backend/reference.hpp"
#include "backend/tensor_pieces.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

using models::UnitKind;
using models::UnitPart;

// A group's collective among `members`: gathers copy every member's slot to
// every member, reduce-scatters leave each member its slot's sum over the
// members, added in member order from zero (Communicator's ordered
// reductions).
void group_exchange(const std::vector<HostWorkload*>& members, const TpStep& step) {
  std::vector<TpExchange> x;
  for (HostWorkload* w : members) x.push_back(w->tp_begin(step));
  const int64_t n = x.front().count;
  const int size = static_cast<int>(members.size());
  const auto slot = [n](const TpExchange& e, int q) { return e.buffer + q * n; };
  if (step.collective == TpCollective::kReduceScatter || step.collective == TpCollective::kKeyValueGradientScatter) {
    std::vector<float> sum(static_cast<size_t>(n));
    for (int q = 0; q < size; ++q) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (const TpExchange& e : x) {
        for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i)] += slot(e, q)[i];
      }
      std::memcpy(slot(x[static_cast<size_t>(q)], q), sum.data(), sum.size() * sizeof(float));
    }
  } else {
    for (int r = 0; r < size; ++r) {
      for (int q = 0; q < size; ++q) {
        if (q != r) std::memcpy(slot(x[static_cast<size_t>(r)], q), slot(x[static_cast<size_t>(q)], q), n * sizeof(float));
      }
    }
  }
  for (HostWorkload* w : members) w->tp_end(step);
}

// One data-parallel place's ranks in one process: cp x tp workloads, rank
// (c, r) holding tp piece r and context chunks c.
class Grid {
 public:
  Grid(const models::ModelSpec& split, const scenarios::Training& training, int cp)
      : tp_(static_cast<int>(split.split.tp)), cp_(cp) {
    for (int c = 0; c < cp_; ++c) {
      for (int r = 0; r < tp_; ++r) {
        ranks_.push_back(std::make_unique<HostWorkload>(split, training.micro_batch_size(), training.sequence_length(),
                                                        TensorParallelRank{r, tp_}, ContextParallelRank{c, cp_}));
      }
    }
  }

  int tp() const { return tp_; }
  int cp() const { return cp_; }
  HostWorkload& at(int c, int r) { return *ranks_[static_cast<size_t>(c * tp_ + r)]; }

  // A tp group's collective in every cp place (none without tp: the
  // workloads run those in place).
  void tensor(int unit, UnitPart part, TpPass pass, TpCollective collective) {
    if (tp_ == 1) return;
    for (int c = 0; c < cp_; ++c) {
      std::vector<HostWorkload*> members;
      for (int r = 0; r < tp_; ++r) members.push_back(&at(c, r));
      group_exchange(members, TpStep{unit, part, pass, collective});
    }
  }
  // A cp group's collective at every tp place.
  void context(int unit, UnitPart part, TpPass pass, TpCollective collective) {
    for (int r = 0; r < tp_; ++r) {
      std::vector<HostWorkload*> members;
      for (int c = 0; c < cp_; ++c) members.push_back(&at(c, r));
      group_exchange(members, TpStep{unit, part, pass, collective});
    }
  }

 private:
  int tp_, cp_;
  std::vector<std::unique_ptr<HostWorkload>> ranks_;
};

}  // namespace

ModelParams reference_train_tensor_parallel(const models::ModelSpec& whole, const models::ModelSpec& split,
                                            const scenarios::Training& training, int world, int shard_ranks,
                                            int64_t steps, uint64_t seed, int cp) {
  RAGGED_ASSERT((split.split.tp > 1 || cp > 1) && split.units.size() == whole.units.size(),
                "reference_train_tensor_parallel: one mesh rank's split of the whole model");
  Grid grid(split, training, cp);
  const int tp = grid.tp();
  const int units = static_cast<int>(split.units.size());
  std::vector<const models::TensorSpec*> piece_specs, whole_specs;
  std::vector<size_t> unit_base;
  for (int u = 0; u < units; ++u) {
    unit_base.push_back(piece_specs.size());
    for (size_t t = 0; t < split.units[static_cast<size_t>(u)].tensors.size(); ++t) {
      piece_specs.push_back(&split.units[static_cast<size_t>(u)].tensors[t]);
      whole_specs.push_back(&whole.units[static_cast<size_t>(u)].tensors[t]);
    }
  }
  const bool tied = head_reads_embedding(split);
  const auto train = [&](const ModelParams& params, const Batch& batch, std::vector<ModelParams>& locals) {
    // Each tp rank's pieces of the parameters, and each rank's gradients.
    std::vector<ModelParams> pieces(static_cast<size_t>(tp)), grads(static_cast<size_t>(cp * tp));
    for (int r = 0; r < tp; ++r) {
      for (size_t i = 0; i < piece_specs.size(); ++i) {
        pieces[static_cast<size_t>(r)].push_back(piece_of(*piece_specs[i], *whole_specs[i], r, params[i]));
      }
    }
    for (int c = 0; c < cp; ++c) {
      for (int r = 0; r < tp; ++r) {
        for (const models::TensorSpec* t : piece_specs) {
          grads[static_cast<size_t>(c * tp + r)].emplace_back(static_cast<size_t>(t->numel()), 0.0f);
        }
        grid.at(c, r).set_batch(batch);
      }
    }
    const auto tensors = [&](int c, int r, int u) {
      const auto b = unit_base[static_cast<size_t>(u)];
      const size_t count = split.units[static_cast<size_t>(u)].tensors.size();
      ModelParams& g = grads[static_cast<size_t>(c * tp + r)];
      std::pair<ConstTensors, Tensors> out;
      for (size_t t = 0; t < count; ++t) {
        out.first.push_back(pieces[static_cast<size_t>(r)][b + t].data());
        out.second.push_back(g[b + t].data());
      }
      if (tied && u == units - 1) {
        out.first.push_back(pieces[static_cast<size_t>(r)][0].data());
        out.second.push_back(g[0].data());
      }
      return out;
    };
    const auto forward = [&](int u, UnitPart part) {
      for (int c = 0; c < cp; ++c) {
        for (int r = 0; r < tp; ++r) grid.at(c, r).forward(u, tensors(c, r, u).first, part);
      }
    };
    const auto backward = [&](int u, UnitPart part) {
      for (int c = 0; c < cp; ++c) {
        for (int r = 0; r < tp; ++r) {
          auto [in, out] = tensors(c, r, u);
          grid.at(c, r).backward(u, in, out, part);
        }
      }
    };
    const auto whole_part = UnitPart::kWhole;
    const auto gather = TpCollective::kAllGather;
    const auto scatter = TpCollective::kReduceScatter;
    // A block part between its tp group's gather and reduce-scatter.
    const auto between = [&](int u, UnitPart part, TpPass pass) {
      grid.tensor(u, part, pass, gather);
      if (pass == TpPass::kForward) {
        forward(u, part);
      } else {
        backward(u, part);
      }
      grid.tensor(u, part, pass, scatter);
    };
    for (int u = 0; u < units; ++u) {
      switch (split.units[static_cast<size_t>(u)].kind) {
        case UnitKind::kEmbedding:
          forward(u, whole_part);
          grid.tensor(u, whole_part, TpPass::kForward, scatter);
          break;
        case UnitKind::kBlock:
          if (cp > 1) {
            grid.tensor(u, UnitPart::kAttentionInput, TpPass::kForward, gather);
            forward(u, UnitPart::kAttentionInput);
            grid.context(u, UnitPart::kAttentionCore, TpPass::kForward, TpCollective::kKeyValueGather);
            forward(u, UnitPart::kAttentionCore);
            grid.tensor(u, UnitPart::kAttentionCore, TpPass::kForward, scatter);
          } else {
            between(u, UnitPart::kAttention, TpPass::kForward);
          }
          between(u, UnitPart::kMlp, TpPass::kForward);
          break;
        case UnitKind::kHead:
          grid.tensor(u, whole_part, TpPass::kForward, gather);
          forward(u, whole_part);
          grid.tensor(u, whole_part, TpPass::kForward, TpCollective::kLossStats);
          break;
        case UnitKind::kExperts: RAGGED_ASSERT(false, "reference: experts under tensor parallelism");
      }
    }
    for (int u = units - 1; u >= 0; --u) {
      switch (split.units[static_cast<size_t>(u)].kind) {
        case UnitKind::kHead:
          backward(u, whole_part);
          grid.tensor(u, whole_part, TpPass::kBackward, scatter);
          break;
        case UnitKind::kBlock:
          between(u, UnitPart::kMlp, TpPass::kBackward);
          if (cp > 1) {
            grid.tensor(u, UnitPart::kAttentionCore, TpPass::kBackward, gather);
            grid.context(u, UnitPart::kAttentionCore, TpPass::kBackward, TpCollective::kKeyValueGather);
            backward(u, UnitPart::kAttentionCore);
            grid.context(u, UnitPart::kAttentionCore, TpPass::kBackward, TpCollective::kKeyValueGradientScatter);
            backward(u, UnitPart::kAttentionInput);
            grid.tensor(u, UnitPart::kAttentionInput, TpPass::kBackward, scatter);
          } else {
            between(u, UnitPart::kAttention, TpPass::kBackward);
          }
          break;
        case UnitKind::kEmbedding:
          grid.tensor(u, whole_part, TpPass::kBackward, gather);
          backward(u, whole_part);
          break;
        case UnitKind::kExperts: RAGGED_ASSERT(false, "reference: experts under tensor parallelism");
      }
    }
    // Each cp rank's gradients into whole tensors: the pieces in place, the
    // uncut weights' partial gradients summed over the tp group in rank
    // order from zero.
    for (int c = 0; c < cp; ++c) {
      ModelParams& local = locals[static_cast<size_t>(c)];
      for (size_t i = 0; i < piece_specs.size(); ++i) {
        const auto of = [&](int r) -> const std::vector<float>& { return grads[static_cast<size_t>(c * tp + r)][i]; };
        if (piece_specs[i]->tp_cut != models::TensorCut::kWhole) {
          for (int r = 0; r < tp; ++r) add_piece(*piece_specs[i], *whole_specs[i], r, of(r), local[i]);
          continue;
        }
        std::vector<float> sum(local[i].size(), 0.0f);
        for (int r = 0; r < tp; ++r) {
          for (size_t e = 0; e < sum.size(); ++e) sum[e] += of(r)[e];
        }
        for (size_t e = 0; e < sum.size(); ++e) local[i][e] += sum[e];
      }
    }
  };
  return reference_train_with(whole, training, world, shard_ranks, steps, seed, false, train, cp);
}

}  // namespace ragged::backend
