// The reference of a tensor-parallel run (reference.hpp): each data-parallel
// rank's micro-batch computed by its tp group's ranks in one process, their
// exchanges written out from the math of Megatron's sequence-parallel block
// (not read from a Program), so that a run matching it bit for bit ran its
// Program's parts and collectives in an order that computes the same sums.

#include <cstring>
#include <memory>
#include <vector>

#include "backend/expert_pieces.hpp"
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
  Grid(const models::ModelSpec& split, const scenarios::Training& training, int cp, int ep_rank)
      : tp_(static_cast<int>(split.split.tp)), cp_(cp) {
    const ExpertParallelRank ep{ep_rank, static_cast<int>(split.split.ep)};
    for (int c = 0; c < cp_; ++c) {
      for (int r = 0; r < tp_; ++r) {
        ranks_.push_back(std::make_unique<HostWorkload>(split, training.micro_batch_size(), training.sequence_length(),
                                                        TensorParallelRank{r, tp_}, ContextParallelRank{c, cp_}, ep));
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

void expert_exchange(const std::vector<HostWorkload*>& members, const EpStep& step) {
  std::vector<EpExchange> x;
  for (HostWorkload* w : members) x.push_back(w->ep_begin(step));
  for (size_t r = 0; r < members.size(); ++r) {
    x[r].recv->clear();
    x[r].recv_counts->clear();
    for (const EpExchange& from : x) {
      int64_t offset = 0;
      for (size_t q = 0; q < r; ++q) offset += from.send_counts[q];
      x[r].recv->insert(x[r].recv->end(), from.send + offset, from.send + offset + from.send_counts[r]);
      x[r].recv_counts->push_back(from.send_counts[r]);
    }
  }
  for (HostWorkload* w : members) w->ep_end(step);
}

ModelParams reference_train_tensor_parallel(const models::ModelSpec& whole, const models::ModelSpec& split,
                                            const scenarios::Training& training, int world, int shard_ranks,
                                            int64_t steps, uint64_t seed, int cp, int ep) {
  RAGGED_ASSERT((split.split.tp > 1 || cp > 1) && split.split.ep == ep,
                "reference_train_tensor_parallel: one mesh rank's split of the whole model");
  // One grid a place of the ep group (one place without ep).
  std::vector<std::unique_ptr<Grid>> grids;
  for (int j = 0; j < ep; ++j) grids.push_back(std::make_unique<Grid>(split, training, cp, j));
  const int tp = grids.front()->tp();
  const int units = static_cast<int>(split.units.size());
  std::vector<const models::TensorSpec*> piece_specs;
  std::vector<size_t> unit_base;
  for (int u = 0; u < units; ++u) {
    unit_base.push_back(piece_specs.size());
    for (const models::TensorSpec& t : split.units[static_cast<size_t>(u)].tensors) piece_specs.push_back(&t);
  }
  // Where each place's tensors lie in the whole model (its experts, tp pieces).
  std::vector<std::vector<TensorOrigin>> origins(static_cast<size_t>(ep));
  for (int j = 0; j < ep; ++j) {
    for (const std::vector<TensorOrigin>& unit : tensor_origins(whole, split, j)) {
      origins[static_cast<size_t>(j)].insert(origins[static_cast<size_t>(j)].end(), unit.begin(), unit.end());
    }
  }
  const auto at_whole = [&](int j, size_t i, int r, int64_t index) {
    const TensorOrigin& o = origins[static_cast<size_t>(j)][i];
    const models::TensorSpec& piece = *piece_specs[i];
    return static_cast<size_t>(o.first + (piece.tp_cut == models::TensorCut::kWhole ? index
                                                                                     : whole_index(piece, *o.whole, r, index)));
  };
  const bool tied = head_reads_embedding(split);
  const auto kind = [&split](int u) { return split.units[static_cast<size_t>(u)].kind; };
  const auto experts_after = [&](int u) { return u + 1 < units && kind(u + 1) == UnitKind::kExperts; };
  const auto train = [&](const ModelParams& params, const std::vector<Batch>& batches,
                         std::vector<std::vector<ModelParams>>& locals) {
    RAGGED_ASSERT(static_cast<int>(batches.size()) == ep, "reference: an ep group's places train together");
    // Each place's tp ranks' pieces of the parameters, and each rank's gradients.
    std::vector<ModelParams> pieces(static_cast<size_t>(ep * tp)), grads(static_cast<size_t>(ep * cp * tp));
    for (int j = 0; j < ep; ++j) {
      for (int r = 0; r < tp; ++r) {
        ModelParams& mine = pieces[static_cast<size_t>(j * tp + r)];
        for (size_t i = 0; i < piece_specs.size(); ++i) {
          const std::vector<float>& values = params[static_cast<size_t>(origins[static_cast<size_t>(j)][i].id)];
          std::vector<float>& piece = mine.emplace_back(static_cast<size_t>(piece_specs[i]->numel()));
          for (int64_t e = 0; e < piece_specs[i]->numel(); ++e) piece[static_cast<size_t>(e)] = values[at_whole(j, i, r, e)];
        }
      }
      for (int c = 0; c < cp; ++c) {
        for (int r = 0; r < tp; ++r) {
          for (const models::TensorSpec* t : piece_specs) {
            grads[static_cast<size_t>((j * cp + c) * tp + r)].emplace_back(static_cast<size_t>(t->numel()), 0.0f);
          }
          grids[static_cast<size_t>(j)]->at(c, r).set_batch(batches[static_cast<size_t>(j)]);
        }
      }
    }
    const auto tensors = [&](int j, int c, int r, int u) {
      const auto b = unit_base[static_cast<size_t>(u)];
      const size_t count = split.units[static_cast<size_t>(u)].tensors.size();
      ModelParams& g = grads[static_cast<size_t>((j * cp + c) * tp + r)];
      ModelParams& p = pieces[static_cast<size_t>(j * tp + r)];
      std::pair<ConstTensors, Tensors> out;
      for (size_t t = 0; t < count; ++t) {
        out.first.push_back(p[b + t].data());
        out.second.push_back(g[b + t].data());
      }
      if (tied && u == units - 1) {
        out.first.push_back(p[0].data());
        out.second.push_back(g[0].data());
      }
      return out;
    };
    const auto every_rank = [&](const auto& run) {
      for (int j = 0; j < ep; ++j) {
        for (int c = 0; c < cp; ++c) {
          for (int r = 0; r < tp; ++r) run(j, c, r);
        }
      }
    };
    const auto forward = [&](int u, UnitPart part) {
      every_rank([&](int j, int c, int r) { grids[static_cast<size_t>(j)]->at(c, r).forward(u, tensors(j, c, r, u).first, part); });
    };
    const auto backward = [&](int u, UnitPart part) {
      every_rank([&](int j, int c, int r) {
        auto [in, out] = tensors(j, c, r, u);
        grids[static_cast<size_t>(j)]->at(c, r).backward(u, in, out, part);
      });
    };
    const auto tensor = [&](int u, UnitPart part, TpPass pass, TpCollective collective) {
      for (const auto& grid : grids) grid->tensor(u, part, pass, collective);
    };
    const auto context = [&](int u, UnitPart part, TpPass pass, TpCollective collective) {
      for (const auto& grid : grids) grid->context(u, part, pass, collective);
    };
    // The places' ranks at one tp rank exchange their routed rows.
    const auto experts = [&](int u, TpPass pass) {
      for (int r = 0; r < tp; ++r) {
        std::vector<HostWorkload*> members;
        for (const auto& grid : grids) members.push_back(&grid->at(0, r));
        expert_exchange(members, EpStep{u, pass});
      }
    };
    const auto whole_part = UnitPart::kWhole;
    const auto gather = TpCollective::kAllGather;
    const auto scatter = TpCollective::kReduceScatter;
    // A block part between its tp group's gather and reduce-scatter (the
    // experts unit's reduce-scatter and gather when they follow the block).
    const auto between = [&](int u, UnitPart part, TpPass pass) {
      const bool apart = part == UnitPart::kMlp && experts_after(u);
      if (pass == TpPass::kForward) {
        tensor(u, part, pass, gather);
        forward(u, part);
        if (!apart) tensor(u, part, pass, scatter);
      } else {
        if (!apart) tensor(u, part, pass, gather);
        backward(u, part);
        tensor(u, part, pass, scatter);
      }
    };
    for (int u = 0; u < units; ++u) {
      switch (kind(u)) {
        case UnitKind::kEmbedding:
          forward(u, whole_part);
          tensor(u, whole_part, TpPass::kForward, scatter);
          break;
        case UnitKind::kBlock:
          if (cp > 1) {
            tensor(u, UnitPart::kAttentionInput, TpPass::kForward, gather);
            forward(u, UnitPart::kAttentionInput);
            context(u, UnitPart::kAttentionCore, TpPass::kForward, TpCollective::kKeyValueGather);
            forward(u, UnitPart::kAttentionCore);
            tensor(u, UnitPart::kAttentionCore, TpPass::kForward, scatter);
          } else {
            between(u, UnitPart::kAttention, TpPass::kForward);
          }
          between(u, UnitPart::kMlp, TpPass::kForward);
          break;
        case UnitKind::kExperts:
          experts(u, TpPass::kForward);
          forward(u, whole_part);
          experts(u, TpPass::kForward);
          tensor(u, whole_part, TpPass::kForward, scatter);
          break;
        case UnitKind::kHead:
          tensor(u, whole_part, TpPass::kForward, gather);
          forward(u, whole_part);
          tensor(u, whole_part, TpPass::kForward, TpCollective::kLossStats);
          break;
      }
    }
    for (int u = units - 1; u >= 0; --u) {
      switch (kind(u)) {
        case UnitKind::kHead:
          backward(u, whole_part);
          tensor(u, whole_part, TpPass::kBackward, scatter);
          break;
        case UnitKind::kExperts:
          tensor(u, whole_part, TpPass::kBackward, gather);
          experts(u, TpPass::kBackward);
          backward(u, whole_part);
          experts(u, TpPass::kBackward);
          break;
        case UnitKind::kBlock:
          between(u, UnitPart::kMlp, TpPass::kBackward);
          if (cp > 1) {
            tensor(u, UnitPart::kAttentionCore, TpPass::kBackward, gather);
            context(u, UnitPart::kAttentionCore, TpPass::kBackward, TpCollective::kKeyValueGather);
            backward(u, UnitPart::kAttentionCore);
            context(u, UnitPart::kAttentionCore, TpPass::kBackward, TpCollective::kKeyValueGradientScatter);
            backward(u, UnitPart::kAttentionInput);
            tensor(u, UnitPart::kAttentionInput, TpPass::kBackward, scatter);
          } else {
            between(u, UnitPart::kAttention, TpPass::kBackward);
          }
          break;
        case UnitKind::kEmbedding:
          tensor(u, whole_part, TpPass::kBackward, gather);
          backward(u, whole_part);
          break;
      }
    }
    // Each rank's gradients into whole tensors: the pieces in place, the
    // uncut weights' partial gradients summed over the tp group in rank
    // order from zero; a place's experts' gradients are its own.
    for (int j = 0; j < ep; ++j) {
      for (int c = 0; c < cp; ++c) {
        ModelParams& local = locals[static_cast<size_t>(j)][static_cast<size_t>(c)];
        for (size_t i = 0; i < piece_specs.size(); ++i) {
          const auto of = [&](int r) -> const std::vector<float>& {
            return grads[static_cast<size_t>((j * cp + c) * tp + r)][i];
          };
          std::vector<float>& into = local[static_cast<size_t>(origins[static_cast<size_t>(j)][i].id)];
          if (piece_specs[i]->tp_cut != models::TensorCut::kWhole) {
            for (int r = 0; r < tp; ++r) {
              for (size_t e = 0; e < of(r).size(); ++e) into[at_whole(j, i, r, static_cast<int64_t>(e))] += of(r)[e];
            }
            continue;
          }
          std::vector<float> sum(of(0).size(), 0.0f);
          for (int r = 0; r < tp; ++r) {
            for (size_t e = 0; e < sum.size(); ++e) sum[e] += of(r)[e];
          }
          for (size_t e = 0; e < sum.size(); ++e) into[at_whole(j, i, 0, static_cast<int64_t>(e))] += sum[e];
        }
      }
    }
  };
  return reference_train_with(whole, training, world, shard_ranks, steps, seed, false, train, cp, ep);
}

}  // namespace ragged::backend
