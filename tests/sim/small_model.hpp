#pragma once
// The small dense model the strategy tests simulate (DDP, Megatron's
// distributed optimizer, FSDP1's gradient passes): hidden 1024, 4 blocks of
// 4 h^2 + 3 h i + 2 h, embedding and head v h, a final norm h.

#include <cstdint>
#include <string>

namespace ragged::sim::testing {

constexpr int64_t kHidden = 1024, kLayers = 4, kIntermediate = 2816, kVocab = 32768;
constexpr int64_t kParams =
    kLayers * (4 * kHidden * kHidden + 3 * kHidden * kIntermediate + 2 * kHidden) + 2 * kVocab * kHidden + kHidden;

// The scenario's model block for it.
inline std::string small_model_block() {
  return "model { inline_spec { hidden_size: 1024 num_layers: 4 vocab_size: 32768 intermediate_size: 2816\n"
         "                      num_attention_heads: 8 num_key_value_heads: 8 } }\n";
}

}  // namespace ragged::sim::testing
