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

// One tp group of workloads in one process.
class Group {
 public:
  Group(const models::ModelSpec& split, const scenarios::Training& training) {
    const int tp = static_cast<int>(split.split.tp);
    for (int r = 0; r < tp; ++r) {
      ranks_.push_back(std::make_unique<HostWorkload>(split, training.micro_batch_size(), training.sequence_length(),
                                                      TensorParallelRank{r, tp}));
    }
  }

  int size() const { return static_cast<int>(ranks_.size()); }
  HostWorkload& rank(int r) { return *ranks_[static_cast<size_t>(r)]; }

  // A collective of the group: gathers copy every rank's slot to every rank,
  // reduce-scatters leave each rank its slot's sum over the ranks, added in
  // rank order from zero (Communicator's ordered reductions).
  void exchange(int unit, UnitPart part, TpPass pass, TpCollective collective) {
    const TpStep step{unit, part, pass, collective};
    std::vector<TpExchange> x;
    for (int r = 0; r < size(); ++r) x.push_back(rank(r).tp_begin(step));
    const int64_t n = x.front().count;
    const auto slot = [n](const TpExchange& e, int q) { return e.buffer + q * n; };
    if (collective == TpCollective::kReduceScatter) {
      std::vector<float> sum(static_cast<size_t>(n));
      for (int q = 0; q < size(); ++q) {
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (const TpExchange& e : x) {
          for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i)] += slot(e, q)[i];
        }
        std::memcpy(slot(x[static_cast<size_t>(q)], q), sum.data(), sum.size() * sizeof(float));
      }
    } else {
      for (int r = 0; r < size(); ++r) {
        for (int q = 0; q < size(); ++q) {
          if (q != r) std::memcpy(slot(x[static_cast<size_t>(r)], q), slot(x[static_cast<size_t>(q)], q), n * sizeof(float));
        }
      }
    }
    for (int r = 0; r < size(); ++r) rank(r).tp_end(step);
  }

 private:
  std::vector<std::unique_ptr<HostWorkload>> ranks_;
};

}  // namespace

ModelParams reference_train_tensor_parallel(const models::ModelSpec& whole, const models::ModelSpec& split,
                                            const scenarios::Training& training, int world, int shard_ranks,
                                            int64_t steps, uint64_t seed) {
  RAGGED_ASSERT(split.split.tp > 1 && split.units.size() == whole.units.size(),
                "reference_train_tensor_parallel: one tp rank's split of the whole model");
  Group group(split, training);
  const int tp = group.size();
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
  const auto train = [&](const ModelParams& params, const Batch& batch, ModelParams& local) {
    // Each rank's pieces of the parameters, and its gradients.
    std::vector<ModelParams> pieces(static_cast<size_t>(tp)), grads(static_cast<size_t>(tp));
    for (int r = 0; r < tp; ++r) {
      for (size_t i = 0; i < piece_specs.size(); ++i) {
        pieces[static_cast<size_t>(r)].push_back(piece_of(*piece_specs[i], *whole_specs[i], r, params[i]));
        grads[static_cast<size_t>(r)].emplace_back(static_cast<size_t>(piece_specs[i]->numel()), 0.0f);
      }
      group.rank(r).set_batch(batch);
    }
    const auto tensors = [&](int r, int u) {
      const auto b = unit_base[static_cast<size_t>(u)];
      const size_t count = split.units[static_cast<size_t>(u)].tensors.size();
      std::pair<ConstTensors, Tensors> out;
      for (size_t t = 0; t < count; ++t) {
        out.first.push_back(pieces[static_cast<size_t>(r)][b + t].data());
        out.second.push_back(grads[static_cast<size_t>(r)][b + t].data());
      }
      if (tied && u == units - 1) {
        out.first.push_back(pieces[static_cast<size_t>(r)][0].data());
        out.second.push_back(grads[static_cast<size_t>(r)][0].data());
      }
      return out;
    };
    const auto forward = [&](int u, UnitPart part) {
      for (int r = 0; r < tp; ++r) group.rank(r).forward(u, tensors(r, u).first, part);
    };
    const auto backward = [&](int u, UnitPart part) {
      for (int r = 0; r < tp; ++r) {
        auto [in, out] = tensors(r, u);
        group.rank(r).backward(u, in, out, part);
      }
    };
    const auto whole_part = UnitPart::kWhole;
    for (int u = 0; u < units; ++u) {
      switch (split.units[static_cast<size_t>(u)].kind) {
        case UnitKind::kEmbedding:
          forward(u, whole_part);
          group.exchange(u, whole_part, TpPass::kForward, TpCollective::kReduceScatter);
          break;
        case UnitKind::kBlock:
          for (UnitPart part : {UnitPart::kAttention, UnitPart::kMlp}) {
            group.exchange(u, part, TpPass::kForward, TpCollective::kAllGather);
            forward(u, part);
            group.exchange(u, part, TpPass::kForward, TpCollective::kReduceScatter);
          }
          break;
        case UnitKind::kHead:
          group.exchange(u, whole_part, TpPass::kForward, TpCollective::kAllGather);
          forward(u, whole_part);
          group.exchange(u, whole_part, TpPass::kForward, TpCollective::kLossStats);
          break;
        case UnitKind::kExperts: RAGGED_ASSERT(false, "reference: experts under tensor parallelism");
      }
    }
    for (int u = units - 1; u >= 0; --u) {
      switch (split.units[static_cast<size_t>(u)].kind) {
        case UnitKind::kHead:
          backward(u, whole_part);
          group.exchange(u, whole_part, TpPass::kBackward, TpCollective::kReduceScatter);
          break;
        case UnitKind::kBlock:
          for (UnitPart part : {UnitPart::kMlp, UnitPart::kAttention}) {
            group.exchange(u, part, TpPass::kBackward, TpCollective::kAllGather);
            backward(u, part);
            group.exchange(u, part, TpPass::kBackward, TpCollective::kReduceScatter);
          }
          break;
        case UnitKind::kEmbedding:
          group.exchange(u, whole_part, TpPass::kBackward, TpCollective::kAllGather);
          backward(u, whole_part);
          break;
        case UnitKind::kExperts: RAGGED_ASSERT(false, "reference: experts under tensor parallelism");
      }
    }
    // Into whole tensors: the pieces in place, the uncut weights' partial
    // gradients summed over the group in rank order from zero.
    for (size_t i = 0; i < piece_specs.size(); ++i) {
      if (piece_specs[i]->tp_cut != models::TensorCut::kWhole) {
        for (int r = 0; r < tp; ++r) add_piece(*piece_specs[i], *whole_specs[i], r, grads[static_cast<size_t>(r)][i], local[i]);
        continue;
      }
      std::vector<float> sum(local[i].size(), 0.0f);
      for (int r = 0; r < tp; ++r) {
        for (size_t e = 0; e < sum.size(); ++e) sum[e] += grads[static_cast<size_t>(r)][i][e];
      }
      for (size_t e = 0; e < sum.size(); ++e) local[i][e] += sum[e];
    }
  };
  return reference_train_with(whole, training, world, shard_ranks, steps, seed, false, train);
}

}  // namespace ragged::backend
