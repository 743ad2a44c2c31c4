// Synthetic data and initial values: pure functions of their arguments
// (splitmix64 hashes), so every rank builds its own share without talking
// and the single-rank reference builds the same numbers.

#include <cmath>
#include <string_view>

#include "backend/workload.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

constexpr uint64_t kTokenSalt = 0x746f6b656e73ULL;  // "tokens"
constexpr uint64_t kInitSalt = 0x696e6974ULL;       // "init"

uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t hash(uint64_t seed, uint64_t salt, uint64_t a, uint64_t b) {
  return splitmix64(splitmix64(splitmix64(seed ^ salt) ^ a) ^ b);
}

int32_t token_at(uint64_t seed, int64_t sequence, int64_t position, int64_t vocab) {
  const uint64_t h = hash(seed, kTokenSalt, static_cast<uint64_t>(sequence), static_cast<uint64_t>(position));
  return static_cast<int32_t>(h % static_cast<uint64_t>(vocab));
}

// Uniform in (-1, 1) from the top 24 bits: exact in fp32.
float uniform(uint64_t h) { return static_cast<float>((static_cast<double>(h >> 40) + 0.5) / 8388608.0 - 1.0); }

bool is_norm(const models::TensorSpec& tensor) {
  if (tensor.role == models::TensorRole::kNorm) return true;
  std::string_view name = tensor.name;
  if (name.ends_with(".weight")) name.remove_suffix(7);
  return name.ends_with("norm");
}

bool is_vector_like(const models::TensorSpec& tensor) {
  const std::string_view name = tensor.name;
  return tensor.shape.size() <= 1 || name.ends_with("bias") || name.ends_with("sinks");
}

}  // namespace

Batch synthetic_batch(uint64_t seed, int64_t first_sequence, int64_t sequences, int64_t seq_len, int64_t vocab) {
  RAGGED_ASSERT(sequences >= 0 && seq_len >= 0 && vocab >= 1 && first_sequence >= 0,
                "synthetic_batch: negative shape or empty vocabulary");
  Batch batch;
  batch.sequences = sequences;
  batch.seq_len = seq_len;
  batch.first_sequence = first_sequence;
  const auto n = static_cast<size_t>(sequences * seq_len);
  batch.tokens.resize(n);
  batch.labels.resize(n);
  for (int64_t s = 0; s < sequences; ++s) {
    const int64_t sequence = first_sequence + s;
    for (int64_t p = 0; p < seq_len; ++p) {
      batch.tokens[static_cast<size_t>(s * seq_len + p)] = token_at(seed, sequence, p, vocab);
    }
    // The label of a position is the next token; the last one's is the
    // token that would come at position seq_len.
    for (int64_t p = 0; p < seq_len; ++p) {
      const size_t i = static_cast<size_t>(s * seq_len + p);
      batch.labels[i] = p + 1 < seq_len ? batch.tokens[i + 1] : token_at(seed, sequence, seq_len, vocab);
    }
  }
  return batch;
}

float initial_value(uint64_t seed, const models::TensorSpec& tensor, int64_t tensor_id, int64_t index) {
  const float u = uniform(hash(seed, kInitSalt, static_cast<uint64_t>(tensor_id), static_cast<uint64_t>(index)));
  if (is_norm(tensor)) return 1.0f + 0.02f * u;
  if (is_vector_like(tensor)) return 0.02f * u;
  const double a = 1.0 / std::sqrt(static_cast<double>(tensor.row_length()));
  return static_cast<float>(a * u);
}

}  // namespace ragged::backend
