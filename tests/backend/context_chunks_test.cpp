// Context parallelism's chunks and its key/value exchange layout
// (backend/context_chunks.hpp), shared by the host and the GPU workloads.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "backend/context_chunks.hpp"
#include "backend/workload.hpp"

namespace ragged::backend {
namespace {

TEST(ContextChunks, EachRankHoldsAHeadAndATailChunkOfEverySequence) {
  // 8 tokens a sequence, cp 2: chunks of 2; rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  EXPECT_EQ(context_positions(0, 2, 2, 8), (std::vector<int32_t>{0, 1, 6, 7, 0, 1, 6, 7}));
  EXPECT_EQ(context_positions(1, 2, 2, 8), (std::vector<int32_t>{2, 3, 4, 5, 2, 3, 4, 5}));
  EXPECT_EQ(context_positions(0, 1, 1, 4), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(ContextChunks, TheGatheredKeysCoverEveryTokenOnceAtItsPosition) {
  const int size = 4;
  const int64_t sequences = 3, seq_len = 16, local = seq_len / size;
  const std::vector<int32_t> rows = gathered_key_rows(size, sequences, seq_len);
  ASSERT_EQ(static_cast<int64_t>(rows.size()), sequences * seq_len);
  std::vector<int32_t> sorted = rows, every(rows.size());
  std::sort(sorted.begin(), sorted.end());
  std::iota(every.begin(), every.end(), 0);
  EXPECT_EQ(sorted, every);  // a permutation: no key lost, none twice
  for (int r = 0; r < size; ++r) {
    const std::vector<int32_t> positions = context_positions(r, size, sequences, seq_len);
    for (int64_t q = 0; q < sequences; ++q) {
      for (int64_t i = 0; i < local; ++i) {
        const auto at = static_cast<size_t>(q * local + i);
        EXPECT_EQ(rows[static_cast<size_t>(r * sequences * local) + at], q * seq_len + positions[at]) << r << " " << at;
      }
    }
  }
  EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.begin() + 4), (std::vector<int32_t>{0, 1, 14, 15}));
}

TEST(ContextChunks, ASlotHoldsTheKeysThenTheValues) {
  const KeyValueSlot slot{6, 4, 3};
  EXPECT_EQ(slot.values_at(), 24);
  EXPECT_EQ(slot.size(), 42);
}

}  // namespace
}  // namespace ragged::backend
