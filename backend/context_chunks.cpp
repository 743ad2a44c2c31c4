#include "backend/context_chunks.hpp"

#include <fmt/format.h>

#include "backend/workload.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

int64_t local_length(int size, int64_t seq_len) {
  RAGGED_ASSERT(size >= 1 && seq_len % (2 * size) == 0, "context parallelism: 2 x cp equal chunks a sequence");
  return seq_len / size;
}

}  // namespace

void check_context_split(int size, int64_t seq_len) {
  if (size >= 1 && seq_len % (2 * size) == 0) return;
  throw InputError(
      fmt::format("training.mesh.cp {}: sequences of {} tokens do not cut into 2 x cp equal chunks; use a "
                  "sequence_length that 2 x cp divides",
                  size, seq_len));
}

std::vector<int32_t> context_positions(int rank, int size, int64_t sequences, int64_t seq_len) {
  const int64_t local_len = local_length(size, seq_len);
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(sequences * local_len));
  for (int64_t q = 0; q < sequences; ++q) {
    for (int64_t i = 0; i < local_len; ++i)
      out.push_back(static_cast<int32_t>(context_position(rank, size, i, local_len)));
  }
  return out;
}

std::vector<int32_t> gathered_key_rows(int size, int64_t sequences, int64_t seq_len) {
  const int64_t local_len = local_length(size, seq_len);
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(size * sequences * local_len));
  for (int r = 0; r < size; ++r) {
    for (int64_t q = 0; q < sequences; ++q) {
      for (int64_t i = 0; i < local_len; ++i) {
        out.push_back(static_cast<int32_t>(q * seq_len + context_position(r, size, i, local_len)));
      }
    }
  }
  return out;
}

}  // namespace ragged::backend
