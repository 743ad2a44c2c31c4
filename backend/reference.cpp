#include "backend/reference.hpp"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "backend/expert_pieces.hpp"
#include "backend/program_walk.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

ModelParams initial_params(const models::ModelSpec& model, uint64_t seed) {
  ModelParams params;
  int64_t id = 0;
  for (const models::UnitSpec& unit : model.units) {
    for (const models::TensorSpec& t : unit.tensors) {
      std::vector<float> values(static_cast<size_t>(t.numel()));
      for (int64_t i = 0; i < t.numel(); ++i) values[static_cast<size_t>(i)] = initial_value(seed, t, id, i);
      params.push_back(std::move(values));
      ++id;
    }
  }
  return params;
}

namespace {

struct TensorState {
  std::vector<float> m, v, update;
  std::vector<int8_t> m_codes;
  std::vector<uint8_t> v_codes;
  std::vector<float> m_scales, v_scales;
  std::vector<ShampooMatrix> shampoo;  // one per matrix of the tensor
};

// One optimizer step on whole tensors: the per-element and per-block math of
// HostOptimizer, applied to the tensor instead of a shard's piece of it.
void step_tensor(const models::TensorSpec& t, const scenarios::Optimizer& o, std::vector<float>& p,
                 const std::vector<float>& g, TensorState& st, int64_t step) {
  const size_t n = p.size();
  switch (tensor_rule(o, t)) {
    case TensorRule::kAdamW:
      adamw_step(p, g, st.m, st.v, step, adamw_params(o));
      break;
    case TensorRule::kAdam8bit:
      adam8bit_step(p, g, st.m_codes, st.m_scales, st.v_codes, st.v_scales, adam8bit_tiles(o, t), step,
                    adamw_params(o));
      break;
    case TensorRule::kMuon: {
      const MuonParams mp = muon_params(o);
      muon_momentum(g, st.m, st.update, mp);
      const int64_t rows = t.rows() / t.matrices(), cols = t.row_length();
      for (int64_t k = 0; k < t.matrices(); ++k) {
        const auto size = static_cast<size_t>(rows * cols);
        newton_schulz(std::span<float>(&st.update[static_cast<size_t>(k) * size], size), rows, cols, mp.ns_steps);
      }
      muon_apply(p, st.update, rows, cols, mp);
      break;
    }
    case TensorRule::kShampoo: {
      const ShampooParams sp = shampoo_params(o);
      std::copy(g.begin(), g.end(), st.update.begin());
      const auto size = static_cast<size_t>((t.rows() / t.matrices()) * t.row_length());
      for (size_t k = 0; k < st.shampoo.size(); ++k) {
        shampoo_precondition(std::span<float>(&st.update[k * size], size), st.shampoo[k], step, sp);
      }
      shampoo_apply(p, st.update, sp);
      break;
    }
    case TensorRule::kSgd:
      sgd_step(p, g, st.m, step, sgd_params(o));
      break;
  }
  (void)n;
}

}  // namespace

ModelParams reference_train_with(const models::ModelSpec& model, const scenarios::Training& training, int world,
                                 int shard_ranks, int64_t steps, uint64_t seed, bool micro_batches_first,
                                 const TrainMicroBatch& train_micro_batch, int shares, int joint) {
  RAGGED_ASSERT(shard_ranks >= 1 && (world * shares) % shard_ranks == 0, "reference_train: shard groups divide the world");
  RAGGED_ASSERT(joint >= 1 && world % joint == 0, "reference_train: ranks trained jointly divide the world");
  ModelParams params = initial_params(model, seed);
  const scenarios::Optimizer& o = training.optimizer();
  std::vector<TensorState> states(params.size());
  size_t flat = 0;
  for (const auto& unit : model.units) {
    for (const auto& t : unit.tensors) {
      TensorState& st = states[flat];
      const size_t n = params[flat].size();
      st.m.assign(n, 0.0f);
      st.v.assign(n, 0.0f);
      st.update.assign(n, 0.0f);
      if (tensor_rule(o, t) == TensorRule::kShampoo) {
        const int64_t block = shampoo_params(o).block_size;
        for (int64_t k = 0; k < t.matrices(); ++k) {
          st.shampoo.push_back(shampoo_matrix(t.rows() / t.matrices(), t.row_length(), block));
        }
      }
      if (o.has_adam8bit()) {
        const auto blocks = static_cast<size_t>(adam8bit_num_blocks(static_cast<int64_t>(n), adam8bit_tiles(o, t)));
        st.m_codes.assign(n, 0);
        st.v_codes.assign(n, 0);
        st.m_scales.assign(blocks, 0.0f);
        st.v_scales.assign(blocks, 0.0f);
      }
      ++flat;
    }
  }
  const int64_t sequences = training.micro_batch_size();
  const int micro_batches = training.gradient_accumulation_steps();
  const float scale = 1.0f / static_cast<float>(world * shares * micro_batches);
  const auto zeros = [&params] {
    ModelParams z;
    for (const auto& p : params) z.emplace_back(p.size(), 0.0f);
    return z;
  };
  // `joint` ranks' micro-batch, forward and backward, their gradients (one
  // set per share of a rank's tokens) added to `locals`.
  const auto train = [&](int64_t step, int mb, int first, std::vector<std::vector<ModelParams>>& locals) {
    std::vector<Batch> batches;
    for (int rank = first; rank < first + joint; ++rank) {
      batches.push_back(synthetic_batch(seed, first_sequence(step, mb, micro_batches, rank, world, sequences), sequences,
                                        training.sequence_length(), model.arch.vocab));
    }
    train_micro_batch(params, batches, locals);
  };
  // The ranks' gradients summed in rank order within a shard group (as the
  // reduce-scatter sums them; a rank's shares are ranks of the group in
  // turn), the groups' sums in group order (the HSDP all-reduce), then
  // scaled into the accumulator. `micro_batches` of them run per rank
  // before the reduction: all of a pipeline stage's, or one.
  const auto reduce = [&](int64_t step, int first_mb, int mbs, ModelParams& grads) {
    ModelParams sum = zeros(), group = zeros();
    int64_t members = 0;
    for (int first = 0; first < world; first += joint) {
      std::vector<std::vector<ModelParams>> locals(static_cast<size_t>(joint));
      for (std::vector<ModelParams>& rank : locals) rank.assign(static_cast<size_t>(shares), zeros());
      for (int mb = first_mb; mb < first_mb + mbs; ++mb) train(step, mb, first, locals);
      for (const std::vector<ModelParams>& rank : locals) {
        for (const ModelParams& local : rank) {
          for (size_t i = 0; i < group.size(); ++i) {
            for (size_t e = 0; e < group[i].size(); ++e) group[i][e] += local[i][e];
          }
          if (++members % shard_ranks != 0) continue;
          for (size_t i = 0; i < sum.size(); ++i) {
            for (size_t e = 0; e < sum[i].size(); ++e) sum[i][e] += group[i][e];
            std::fill(group[i].begin(), group[i].end(), 0.0f);
          }
        }
      }
    }
    for (size_t i = 0; i < grads.size(); ++i) {
      for (size_t e = 0; e < grads[i].size(); ++e) grads[i][e] += sum[i][e] * scale;
    }
  };
  for (int64_t step = 1; step <= steps; ++step) {
    ModelParams grads = zeros();
    if (micro_batches_first) {
      reduce(step, 0, micro_batches, grads);
    } else {
      for (int mb = 0; mb < micro_batches; ++mb) reduce(step, mb, 1, grads);
    }
    flat = 0;
    for (const auto& unit : model.units) {
      for (const auto& t : unit.tensors) {
        step_tensor(t, o, params[flat], grads[flat], states[flat], step);
        ++flat;
      }
    }
  }
  return params;
}

namespace {

// Each routed expert's gradients of an ep group's ranks, summed in rank
// order from zero, held by the expert's rank alone.
void gradients_to_expert_ranks(const models::ModelSpec& model, std::vector<std::vector<ModelParams>>& locals) {
  const auto ep = static_cast<int64_t>(locals.size());
  const int64_t local_experts = model.arch.experts / ep;
  size_t flat = 0;
  for (const models::UnitSpec& unit : model.units) {
    for (const models::TensorSpec& t : unit.tensors) {
      const ExpertSlices slices = expert_slices(t, model.arch);
      for (int64_t k = 0; k < slices.experts; ++k) {
        const int64_t owner = (slices.first_expert + k) / local_experts;
        const auto length = static_cast<size_t>(t.numel() / slices.experts);
        const size_t begin = static_cast<size_t>(k) * length;
        std::vector<float> sum(length, 0.0f);
        for (std::vector<ModelParams>& rank : locals) {
          std::vector<float>& g = rank.front()[flat];
          for (size_t e = 0; e < length; ++e) sum[e] += g[begin + e];
        }
        for (int64_t r = 0; r < ep; ++r) {
          std::vector<float>& g = locals[static_cast<size_t>(r)].front()[flat];
          if (r == owner) {
            std::copy(sum.begin(), sum.end(), g.begin() + static_cast<std::ptrdiff_t>(begin));
          } else {
            std::fill_n(g.begin() + static_cast<std::ptrdiff_t>(begin), length, 0.0f);
          }
        }
      }
      ++flat;
    }
  }
}

}  // namespace

ModelParams reference_train(const models::ModelSpec& model, const scenarios::Training& training, int world,
                            int shard_ranks, int64_t steps, uint64_t seed, bool micro_batches_first, int ep) {
  HostWorkload workload(model, training.micro_batch_size(), training.sequence_length());
  std::vector<size_t> unit_base;  // each unit's first tensor in params
  size_t base = 0;
  for (const auto& unit : model.units) {
    unit_base.push_back(base);
    base += unit.tensors.size();
  }
  // A tied head also reads (and adds to the gradient of) the embedding table.
  const bool tied = head_reads_embedding(model);
  const size_t head = model.units.size() - 1;
  const auto train_one = [&](const ModelParams& params, const Batch& batch, ModelParams& local) {
    workload.set_batch(batch);
    for (size_t u = 0; u < model.units.size(); ++u) {
      ConstTensors view;
      for (size_t t = 0; t < model.units[u].tensors.size(); ++t) view.push_back(params[unit_base[u] + t].data());
      if (tied && u == head) view.push_back(params[0].data());
      workload.forward(static_cast<int>(u), view);
    }
    for (size_t u = model.units.size(); u-- > 0;) {
      ConstTensors view;
      Tensors grad_view;
      for (size_t t = 0; t < model.units[u].tensors.size(); ++t) {
        view.push_back(params[unit_base[u] + t].data());
        grad_view.push_back(local[unit_base[u] + t].data());
      }
      if (tied && u == head) {
        view.push_back(params[0].data());
        grad_view.push_back(local[0].data());
      }
      workload.backward(static_cast<int>(u), view, grad_view);
    }
  };
  const auto train = [&](const ModelParams& params, const std::vector<Batch>& batches,
                         std::vector<std::vector<ModelParams>>& locals) {
    for (size_t j = 0; j < batches.size(); ++j) train_one(params, batches[j], locals[j].front());
    if (ep > 1) gradients_to_expert_ranks(model, locals);
  };
  return reference_train_with(model, training, world, shard_ranks, steps, seed, micro_batches_first, train, 1,
                              std::max(ep, 1));
}

ParamError compare_params(const models::ModelSpec& model, const ModelParams& params, const ModelParams& reference) {
  ParamError error;
  size_t flat = 0;
  for (const auto& unit : model.units) {
    for (const auto& t : unit.tensors) {
      RAGGED_ASSERT(params[flat].size() == reference[flat].size(), "compare_params: " + t.name + " sizes differ");
      double diff = 0, norm = 0;
      bool finite = true;
      for (size_t e = 0; e < reference[flat].size(); ++e) {
        const float trained = params[flat][e], expected = reference[flat][e];
        if (!std::isfinite(trained) || !std::isfinite(expected)) {
          if (error.non_finite_elements++ == 0) {
            error.first_non_finite = fmt::format("{} [{}]: trained {}, reference {}", t.name, e, trained, expected);
          }
          finite = false;
          ++error.differing_elements;
          continue;
        }
        const double d = static_cast<double>(trained) - expected;
        diff += d * d;
        norm += static_cast<double>(expected) * expected;
        error.differing_elements += std::memcmp(&trained, &expected, sizeof(float)) != 0;
      }
      error.elements += static_cast<int64_t>(reference[flat].size());
      const double relative = !finite        ? std::numeric_limits<double>::infinity()
                              : norm > 0     ? std::sqrt(diff / norm)
                                             : std::sqrt(diff);
      if (error.worst_tensor.empty() || relative > error.max_relative) {
        error.worst_tensor = t.name;
        error.max_relative = relative;
      }
      ++flat;
    }
  }
  return error;
}

}  // namespace ragged::backend
