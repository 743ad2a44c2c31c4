#pragma once
// Context parallelism's chunks and the layout of its key/value exchange
// (docs/MESH.md), shared by the host workload (workload_cp.cpp) and the
// GPU's (cuda/gpu_workload_context.cpp) so that both hold the same tokens
// and move the same rows: a cp rank of `size` holds, of each sequence of
// `seq_len` tokens, chunks rank and 2 x size - 1 - rank of 2 x size
// (context_position, workload.hpp), its local tokens numbered sequence by
// sequence; its attention reads every rank's keys and values gathered at
// their positions.

#include <cstdint>
#include <vector>

namespace ragged::backend {

// InputError unless sequences of `seq_len` tokens cut into 2 x `size` equal chunks.
void check_context_split(int size, int64_t seq_len);

// Each local token's position in its sequence, sequences x seq_len / size of them.
std::vector<int32_t> context_positions(int rank, int size, int64_t sequences, int64_t seq_len);

// For every rank r of the group, in order, and each of its local tokens i:
// the row of i's key among the keys of every token of the sequences
// (sequence q's keys at rows [q x seq_len, (q + 1) x seq_len)). The gather
// places rank r's row i there; the gradients' reduce-scatter takes rank r's
// slot from there. [size][sequences x seq_len / size].
std::vector<int32_t> gathered_key_rows(int size, int64_t sequences, int64_t seq_len);

// One rank's slot of the key/value exchange: its `tokens` local tokens'
// keys (key_width each), then their values (value_width each); the
// gradients travel in the same layout.
struct KeyValueSlot {
  int64_t tokens = 0, key_width = 0, value_width = 0;
  int64_t values_at() const { return tokens * key_width; }
  int64_t size() const { return tokens * (key_width + value_width); }
};

}  // namespace ragged::backend
