#pragma once
// Internal to the host workload: what one HostWorkload holds for its
// micro-batch (workload.cpp runs the units whole, workload_tp.cpp as one
// tensor-parallel rank's parts and exchanges).

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "backend/workload.hpp"
#include "backend/workload_internal.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

// One tensor-parallel rank's buffers of a unit (sequence parallelism: the
// rank holds rows [rank * T / tp, (rank + 1) * T / tp) of every hidden state
// between the parts; a part computes on all T rows).
struct TpUnitState {
  detail::Buf gathered[2];  // the gathered input of part 0 (attention, or the whole unit) and 1 (MLP)
  detail::Buf partial;      // a part's partial output (forward) or input gradient (backward), reduce-scattered in place
  detail::Buf x1;           // a block's rows of the residual after its attention
  detail::Buf grad_gathered;  // a backward part's gathered output gradient
  detail::Buf dx1;          // a block's rows of the gradient of that residual
  detail::Buf scratch;      // a recomputed pass's exchange: communication only (the host kept the activations)
  // Context parallelism: the exchange of keys and values (or their
  // gradients), every key and value of the rank's sequences, the core's
  // gradients of the rank's queries and of every key, and of its own keys.
  detail::Buf kv, k_all, v_all, dq, dk_all, dv_all, dk, dv;
};

// The head's vocabulary-parallel cross-entropy: per token and rank, the
// maximum logit of the rank's vocabulary, the sum of exp(logit - that
// maximum) and the target's logit (0 off the rank), gathered; then combined
// in rank order on every rank.
struct TpLoss {
  std::vector<double> stats;  // [rank][token][3], gathered as floats (2 per double)
  std::vector<double> max, sum;  // per token, combined
};

// An experts unit's rows on one expert-parallel rank. As the source of its
// own tokens' rows: what it sent each rank, in (expert, token) order. As the
// owner of its experts: per source rank and local expert, the rows received
// (GluCache.x) and what the experts made of them.
struct EpUnitState {
  bool second[3] = {false, false, false};  // per TpPass: the pass's first exchange ran
  detail::Buf dispatched, combined;  // the forward's two sends, kept for a recomputed pass
  std::vector<int64_t> dispatched_counts, combined_counts;
  detail::Buf send, recv;
  std::vector<int64_t> recv_counts;
  std::vector<std::vector<detail::GluCache>> owned;  // [source][local expert]
  std::vector<std::vector<detail::Buf>> owned_dy, owned_dx;  // [source][local expert]
  detail::Buf again;  // a recomputed pass's received rows, unread
  std::vector<int64_t> again_counts;
};

struct HostWorkload::State {
  TensorParallelRank tp;
  ContextParallelRank cp;
  ExpertParallelRank ep;
  std::vector<EpUnitState> ep_units;  // per unit, when ep.size > 1
  std::vector<detail::ExpertsLayout> experts;  // per unit: an experts unit's layout
  std::vector<int32_t> positions;  // context parallelism: each local token's position in its sequence
  std::vector<TpUnitState> tp_units;  // per unit, when tp.size > 1
  TpLoss tp_loss;
  // A tp rank's rows of the vocabulary: its token and label ids (-1 off the rank).
  std::vector<int32_t> local_tokens, local_labels;
  int64_t rows() const { return dims.tokens / tp.size; }  // this rank's rows of a hidden state
  int64_t first_row() const { return tp.rank * rows(); }

  models::ModelSpec model;
  int64_t sequences = 0;
  int64_t seq_len = 0;
  detail::Dims dims;
  int64_t vocab = 0;
  std::vector<detail::BlockLayout> blocks;  // indexed by unit
  detail::HeadLayout head;
  detail::Ctx ctx;

  Batch batch;
  bool has_batch = false;
  std::vector<detail::Buf> acts;  // output of each unit (a tp rank: its rows)
  std::vector<bool> forwarded;  // this micro-batch
  std::vector<detail::BlockCache> caches;
  detail::HeadCache head_cache;
  detail::Buf grad, grad_next;  // d loss / d acts[grad_unit]
  int grad_unit = -1;

  int units() const { return static_cast<int>(model.units.size()); }

  const models::UnitSpec& unit_checked(int unit, size_t pointers) const {
    RAGGED_ASSERT(unit >= 0 && unit < units(), fmt::format("host workload: no unit {}", unit));
    RAGGED_ASSERT(has_batch, "host workload: set_batch before forward/backward");
    RAGGED_ASSERT(pointers == workload_tensor_count(model, unit),
                  fmt::format("host workload: unit {} takes {} tensors, got {}", model.units[unit].name,
                              workload_tensor_count(model, unit), pointers));
    return model.units[static_cast<size_t>(unit)];
  }

  // The head's weight: lm_head, or the tied table after the unit's tensors.
  int head_weight(const models::UnitSpec& spec) const {
    return head.weight >= 0 ? head.weight : static_cast<int>(spec.tensors.size());
  }
};

}  // namespace ragged::backend
