#pragma once
// Small models and a parameter store shared by the host workload suites.

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/workload.hpp"
#include "models/model_spec.hpp"

namespace ragged::backend::test_util {

using models::ArchConfig;

// Llama-ish: hidden 64, 2 layers, 4 heads over 2 kv heads of 16, ffn 96, vocab 101.
inline ArchConfig tiny_arch(const std::string& family) {
  ArchConfig arch;
  arch.name = "tiny-" + family;
  arch.family = family;
  arch.hidden = 64;
  arch.layers = 2;
  arch.vocab = 101;
  arch.intermediate = 96;
  arch.heads = 4;
  arch.kv_heads = 2;
  arch.head_dim = 16;
  return arch;
}

inline ArchConfig with_experts(ArchConfig arch, int64_t experts, int64_t top_k, int64_t width) {
  arch.experts = experts;
  arch.experts_per_token = top_k;
  arch.moe_intermediate = width;
  return arch;
}

inline ArchConfig with_mla(ArchConfig arch, int64_t q_lora) {
  arch.attention = models::AttentionKind::kMla;
  arch.kv_heads = arch.heads;
  arch.head_dim = 0;
  arch.q_lora_rank = q_lora;
  arch.kv_lora_rank = 24;
  arch.qk_nope_head_dim = 16;
  arch.qk_rope_head_dim = 8;
  arch.v_head_dim = 12;  // narrower than q.k: the mixing folds the product
  return arch;
}

struct NamedArch {
  std::string name;
  ArchConfig arch;
};

inline void PrintTo(const NamedArch& arch, std::ostream* os) { *os << arch.name; }

// One small model per supported feature.
inline std::vector<NamedArch> test_archs() {
  std::vector<NamedArch> out;
  out.push_back({"llama", tiny_arch("llama")});
  ArchConfig qwen2 = tiny_arch("qwen2");
  qwen2.qkv_bias = true;
  qwen2.tie_embeddings = true;
  out.push_back({"qwen2_tied", qwen2});
  ArchConfig qwen3 = tiny_arch("qwen3");
  qwen3.qk_norm = true;
  out.push_back({"qwen3", qwen3});
  ArchConfig qwen3_moe = with_experts(tiny_arch("qwen3_moe"), 4, 2, 32);
  qwen3_moe.qk_norm = true;
  qwen3_moe.expert_bias = true;
  out.push_back({"qwen3_moe_expert_bias", qwen3_moe});
  out.push_back({"mixtral", with_experts(tiny_arch("mixtral"), 4, 2, 32)});
  ArchConfig deepseek = with_mla(with_experts(tiny_arch("deepseek_v3"), 4, 2, 32), 32);
  deepseek.shared_experts = 1;
  deepseek.first_dense_layers = 1;
  deepseek.router_bias = true;
  out.push_back({"deepseek_v3_mla_shared", deepseek});
  ArchConfig lite = with_mla(tiny_arch("deepseek_v2"), 0);
  lite.attention_bias = true;
  out.push_back({"deepseek_mla_no_q_lora", lite});
  ArchConfig oss = with_experts(tiny_arch("gpt_oss"), 4, 2, 32);
  oss.attention_bias = true;
  oss.attention_sinks = true;
  oss.expert_storage = models::ExpertStorage::kFused;
  oss.expert_bias = true;
  oss.router_bias = true;
  out.push_back({"gpt_oss_fused", oss});
  return out;
}

inline ArchConfig test_arch(const std::string& name) {
  for (const NamedArch& arch : test_archs()) {
    if (arch.name == name) return arch.arch;
  }
  ADD_FAILURE() << "no test architecture " << name;
  return {};
}

// Every tensor of a model in host memory, with gradients, in unit order.
struct ModelStore {
  models::ModelSpec model;
  std::vector<std::vector<std::vector<float>>> params;  // [unit][tensor][element]
  std::vector<std::vector<std::vector<float>>> grads;

  // initial_value, scaled up so activations and gradients are O(1) (easier
  // to check against finite differences in fp32): matrices times `scale`,
  // the embedding to [-0.5, 0.5], norms to 1 +- 0.2, biases to +- 0.2.
  ModelStore(const models::ModelSpec& spec, uint64_t seed, float scale = 1.0f) : model(spec) {
    int64_t id = 0;
    for (const models::UnitSpec& unit : model.units) {
      params.emplace_back();
      grads.emplace_back();
      for (const models::TensorSpec& tensor : unit.tensors) {
        std::vector<float> values(static_cast<size_t>(tensor.numel()));
        const bool bias = tensor.name.find("bias") != std::string::npos || tensor.name.ends_with("sinks");
        const bool norm = tensor.role == models::TensorRole::kNorm || tensor.name.find("norm") != std::string::npos;
        const float embed = 0.5f * std::sqrt(static_cast<float>(tensor.row_length()));
        for (int64_t i = 0; i < tensor.numel(); ++i) {
          const float v = initial_value(seed, tensor, id, i);
          float& out = values[static_cast<size_t>(i)];
          if (tensor.role == models::TensorRole::kEmbedding) {
            out = v * embed;
          } else if (norm) {
            out = 1.0f + (v - 1.0f) * 10.0f;
          } else if (bias || !tensor.is_matrix()) {
            out = v * 10.0f;
          } else {
            out = v * scale;
          }
        }
        params.back().push_back(std::move(values));
        grads.back().emplace_back(static_cast<size_t>(tensor.numel()), 0.0f);
        ++id;
      }
    }
  }

  ConstTensors param_view(int unit) const {
    ConstTensors view;
    for (const auto& t : params[static_cast<size_t>(unit)]) view.push_back(t.data());
    if (view.size() < workload_tensor_count(model, unit)) view.push_back(params[0][0].data());
    return view;
  }

  Tensors grad_view(int unit) {
    Tensors view;
    for (auto& t : grads[static_cast<size_t>(unit)]) view.push_back(t.data());
    if (view.size() < workload_tensor_count(model, unit)) view.push_back(grads[0][0].data());
    return view;
  }

  int units() const { return static_cast<int>(model.units.size()); }

  void zero_grads() {
    for (auto& unit : grads) {
      for (auto& t : unit) std::fill(t.begin(), t.end(), 0.0f);
    }
  }

  // Forward from unit `from` (the earlier units' activations must be current).
  double forward(HostWorkload& work, int from = 0) const {
    for (int u = from; u < units(); ++u) work.forward(u, param_view(u));
    return work.loss();
  }

  void backward(HostWorkload& work) {
    for (int u = units() - 1; u >= 0; --u) work.backward(u, param_view(u), grad_view(u));
  }
};

}  // namespace ragged::backend::test_util
