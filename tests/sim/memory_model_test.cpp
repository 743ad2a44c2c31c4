// The caching allocator model: hand-worked sequences whose reserved and
// allocated bytes follow from the rules of docs/SIMULATOR.md (PyTorch's
// CUDACachingAllocator defaults) and the strategy effects the simulator
// builds on. Randomized runs and the timing bound: allocator_random_test.cpp.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/errors.hpp"
#include "sim/memory_model.hpp"
#include "allocator_test_util.hpp"

namespace ragged::sim {
namespace {

using allocator_test::GiB;
using allocator_test::KiB;
using allocator_test::MiB;
using allocator_test::expandable;
using allocator_test::with_capacity;

// The (size, allocated) blocks of the segment at `index` in address order.
std::vector<std::pair<int64_t, bool>> layout(const CachingAllocator& allocator, size_t index) {
  const std::vector<SegmentSnapshot> segments = allocator.snapshot();
  std::vector<std::pair<int64_t, bool>> out;
  for (const BlockSnapshot& b : segments.at(index).blocks) out.emplace_back(b.size, b.allocated);
  return out;
}

TEST(AllocatorRules, RequestsRoundUpTo512Bytes) {
  CachingAllocator a(AllocatorOptions{});
  EXPECT_TRUE(a.allocate(1, {1}));
  EXPECT_EQ(a.allocated(), 512);
  EXPECT_EQ(a.reserved(), 2 * MiB);  // one small segment
  a.allocate(2, {513});
  EXPECT_EQ(a.allocated(), 512 + 1024);
  a.allocate(3, {0});  // zero bytes take nothing, as in PyTorch
  EXPECT_EQ(a.allocated(), 1536);
  a.release(3);
  EXPECT_EQ(a.reserved(), 2 * MiB);
}

TEST(AllocatorRules, SmallAndLargeRequestsUseDifferentPools) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {1 * MiB});        // kSmallSize itself is small: a 2 MiB segment
  a.allocate(2, {1 * MiB + 1});    // rounds to 1 MiB + 512: large, a 20 MiB segment
  EXPECT_EQ(a.reserved(), 22 * MiB);
  const auto segments = a.snapshot();
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_TRUE(segments[0].small_pool);
  EXPECT_FALSE(segments[1].small_pool);
  // The small segment's free megabyte never serves a large request, nor the
  // large segment's free space a small one.
  a.release(1);
  a.allocate(3, {1 * MiB + 512});
  a.allocate(4, {1 * MiB});
  EXPECT_EQ(a.reserved(), 22 * MiB);
  a.allocate(5, {2 * MiB});  // large: from the 20 MiB segment's remainder
  EXPECT_EQ(a.reserved(), 22 * MiB);
  a.allocate(6, {1 * MiB});  // small: the small segment's other half
  a.allocate(7, {512});      // the small segment is full: a second one
  EXPECT_EQ(a.reserved(), 24 * MiB);
}

TEST(AllocatorRules, SegmentSizesFollowTheRequest) {
  struct Case {
    int64_t request, segment;
  };
  for (const Case c : {Case{1, 2 * MiB}, Case{1 * MiB, 2 * MiB}, Case{1 * MiB + 1, 20 * MiB},
                       Case{10 * MiB - 512, 20 * MiB}, Case{10 * MiB, 10 * MiB},
                       Case{11 * MiB + 1, 12 * MiB}, Case{1 * GiB + 1, 1 * GiB + 2 * MiB}}) {
    CachingAllocator a(AllocatorOptions{});
    a.allocate(1, {c.request});
    EXPECT_EQ(a.reserved(), c.segment) << "request " << c.request;
  }
}

TEST(AllocatorRules, FreedBlockOfTheSameSizeIsReused) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {100 * MiB});
  a.release(1);
  EXPECT_EQ(a.allocated(), 0);
  EXPECT_EQ(a.reserved(), 100 * MiB);  // cached, still reserved
  a.allocate(2, {100 * MiB});
  EXPECT_EQ(a.reserved(), 100 * MiB);
  EXPECT_EQ(a.snapshot().size(), 1u);
  EXPECT_EQ(a.peak_reserved(), 100 * MiB);
}

TEST(AllocatorRules, BestFitTakesTheSmallestFittingBlock) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {30 * MiB});
  a.allocate(2, {50 * MiB});
  a.allocate(3, {40 * MiB});
  for (int64_t id : {1, 2, 3}) a.release(id);
  a.allocate(4, {35 * MiB});  // 40 fits best; 5 MiB left is split off
  EXPECT_EQ(layout(a, 2), (std::vector<std::pair<int64_t, bool>>{{35 * MiB, true}, {5 * MiB, false}}));
  a.allocate(5, {45 * MiB});  // 50 fits best
  EXPECT_EQ(layout(a, 1), (std::vector<std::pair<int64_t, bool>>{{45 * MiB, true}, {5 * MiB, false}}));
  EXPECT_EQ(a.reserved(), 120 * MiB);
  a.allocate(6, {31 * MiB});  // free: 30, 5, 5: nothing fits, a new 32 MiB segment
  EXPECT_EQ(a.reserved(), 152 * MiB);
  EXPECT_EQ(a.allocated(), (35 + 45 + 32) * MiB);  // 1 MiB left is not split off
}

TEST(AllocatorRules, BestFitTiesGoToTheLowestAddress) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {40 * MiB});
  a.allocate(2, {40 * MiB});
  a.release(2);
  a.release(1);
  a.allocate(3, {40 * MiB});
  EXPECT_TRUE(a.snapshot()[0].blocks[0].allocated);
  EXPECT_FALSE(a.snapshot()[1].blocks[0].allocated);
}

TEST(AllocatorRules, LargeBlocksSplitAndCoalesce) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {100 * MiB});
  a.release(1);
  a.allocate(2, {40 * MiB});
  a.allocate(3, {40 * MiB});
  using Layout = std::vector<std::pair<int64_t, bool>>;
  EXPECT_EQ(layout(a, 0), (Layout{{40 * MiB, true}, {40 * MiB, true}, {20 * MiB, false}}));
  EXPECT_EQ(a.allocated(), 80 * MiB);
  EXPECT_EQ(a.reserved(), 100 * MiB);
  a.release(2);  // its neighbours are in use: no merge
  EXPECT_EQ(layout(a, 0), (Layout{{40 * MiB, false}, {40 * MiB, true}, {20 * MiB, false}}));
  a.release(3);  // merges with both neighbours back into the whole segment
  EXPECT_EQ(layout(a, 0), (Layout{{100 * MiB, false}}));
  a.allocate(4, {100 * MiB});
  EXPECT_EQ(a.reserved(), 100 * MiB);
}

TEST(AllocatorRules, LargeRemainderOfAtMostOneMiBIsNotSplit) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {100 * MiB});
  a.release(1);
  a.allocate(2, {99 * MiB});  // 1 MiB left is not > kSmallSize: the whole block is handed out
  EXPECT_EQ(a.allocated(), 100 * MiB);
  EXPECT_EQ(a.snapshot()[0].blocks.size(), 1u);
  a.release(2);
  a.allocate(3, {99 * MiB - 512});  // 1 MiB + 512 left: split
  EXPECT_EQ(a.allocated(), 99 * MiB - 512);
  EXPECT_EQ(a.snapshot()[0].blocks.size(), 2u);
}

TEST(AllocatorRules, SmallSegmentsSplitDownTo512Bytes) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {1 * MiB});
  a.allocate(2, {1 * MiB - 512});  // 512 B left: split (remainder >= kMinBlockSize)
  EXPECT_EQ(a.snapshot()[0].blocks.size(), 3u);
  a.allocate(3, {1});
  EXPECT_EQ(a.allocated(), 2 * MiB);
  EXPECT_EQ(a.reserved(), 2 * MiB);
  a.release(2);
  a.release(1);
  EXPECT_EQ(layout(a, 0), (std::vector<std::pair<int64_t, bool>>{{2 * MiB - 512, false}, {512, true}}));
}

TEST(AllocatorRules, FragmentationKeepsReservedAndNeedsANewSegment) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {100 * MiB});
  a.release(1);
  for (int64_t id : {2, 3, 4, 5}) a.allocate(id, {25 * MiB});
  a.release(2);
  a.release(4);
  EXPECT_EQ(a.allocated(), 50 * MiB);
  EXPECT_EQ(a.reserved(), 100 * MiB);  // 50 MiB cached, but in two 25 MiB holes
  a.allocate(6, {40 * MiB});
  EXPECT_EQ(a.reserved(), 140 * MiB);
  EXPECT_EQ(a.peak_allocated(), 100 * MiB);
  EXPECT_EQ(a.peak_reserved(), 140 * MiB);
}

TEST(AllocatorCapacity, CachedSegmentsAreReleasedBeforeOom) {
  CachingAllocator a(with_capacity(100 * MiB));
  a.allocate(1, {60 * MiB});
  a.allocate(2, {30 * MiB});  // a 30 MiB segment
  a.allocate(3, {1 * MiB});   // a 2 MiB small segment
  a.release(1);
  a.release(3);
  EXPECT_EQ(a.reserved(), 92 * MiB);
  // 70 MiB fits no cached block and 92 + 70 > 100: both whole free segments
  // (the 60 MiB and the small one) are released; the busy one stays.
  EXPECT_TRUE(a.allocate(4, {70 * MiB}));
  EXPECT_FALSE(a.out_of_memory());
  EXPECT_EQ(a.reserved(), 100 * MiB);
  EXPECT_EQ(a.peak_reserved(), 100 * MiB);
  ASSERT_EQ(a.snapshot().size(), 2u);
}

TEST(AllocatorCapacity, PartlyUsedSegmentsAreNotReleased) {
  CachingAllocator a(with_capacity(100 * MiB));
  a.allocate(1, {60 * MiB});
  a.release(1);
  a.allocate(2, {20 * MiB});  // splits the 60 MiB segment: 40 MiB stay cached in it
  EXPECT_FALSE(a.allocate(3, {50 * MiB}));
  EXPECT_TRUE(a.out_of_memory());
  EXPECT_EQ(a.reserved(), 110 * MiB);
}

TEST(AllocatorCapacity, OomIsRecordedAndThePeakPassesCapacity) {
  CachingAllocator a(with_capacity(100 * MiB));
  EXPECT_TRUE(a.allocate(1, {60 * MiB}));
  EXPECT_FALSE(a.allocate(2, {60 * MiB}));
  EXPECT_TRUE(a.out_of_memory());
  EXPECT_EQ(a.allocated(), 120 * MiB);
  EXPECT_EQ(a.reserved(), 120 * MiB);
  EXPECT_EQ(a.peak_reserved(), 120 * MiB);
  a.release(2);
  a.release(1);
  EXPECT_EQ(a.allocated(), 0);
  EXPECT_TRUE(a.out_of_memory());  // sticky for the step
  EXPECT_EQ(a.peak_reserved(), 120 * MiB);
  // The next segment first releases the cache, which brings reserved back under capacity.
  EXPECT_TRUE(a.allocate(3, {80 * MiB}));
  EXPECT_EQ(a.reserved(), 80 * MiB);
}

TEST(AllocatorCapacity, PeakCountsEveryPieceOfOneCall) {
  CachingAllocator a(with_capacity(100 * MiB));
  a.allocate(1, {44 * MiB});
  a.release(1);
  // 56 MiB fits no cached block: a new segment, reserved 100. The 1 KiB piece
  // needs a small segment, 100 + 2 > 100: the cached 44 MiB segment goes first.
  EXPECT_TRUE(a.allocate(2, {56 * MiB, 1 * KiB}));
  EXPECT_EQ(a.reserved(), 58 * MiB);
  EXPECT_EQ(a.peak_reserved(), 100 * MiB);
}

TEST(AllocatorCapacity, ARetryReportsItsDriverCalls) {
  CachingAllocator a(with_capacity(100 * MiB));
  a.allocate(1, {60 * MiB});
  EXPECT_EQ(a.last_cost().new_segments, 1);
  EXPECT_EQ(a.last_cost().flushes, 0);
  a.allocate(2, {1 * MiB});
  a.release(1);
  a.release(2);
  a.allocate(3, {70 * MiB});  // 62 + 70 > 100: both cached segments go, then the retry fits
  EXPECT_EQ(a.last_cost().flushes, 1);
  EXPECT_EQ(a.last_cost().released_segments, 2);
  EXPECT_EQ(a.last_cost().new_segments, 1);
  EXPECT_FALSE(a.last_cost().out_of_memory);
  EXPECT_EQ(a.flushes(), 1);
  a.allocate(4, {10 * MiB});  // a new segment that fits: no release
  EXPECT_EQ(a.last_cost().flushes, 0);
  EXPECT_EQ(a.flushes(), 1);
}

// Upstream reuses a cached block only on the stream it was allocated on
// (get_free_block compares the stream first).
TEST(AllocatorStreams, CachedBlocksServeOnlyTheirStream) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {100 * MiB}, 1);
  a.release(1);
  a.allocate(2, {100 * MiB}, 0);  // stream 0 cannot use stream 1's cached block
  EXPECT_EQ(a.reserved(), 200 * MiB);
  a.allocate(3, {40 * MiB}, 1);   // stream 1 can, and splits it
  EXPECT_EQ(a.reserved(), 200 * MiB);
  const auto segments = a.snapshot();
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].stream, 1);
  EXPECT_EQ(segments[1].stream, 0);
  EXPECT_EQ(layout(a, 0), (std::vector<std::pair<int64_t, bool>>{{40 * MiB, true}, {60 * MiB, false}}));
}

// A small allocation of another stream cannot split a large cached block of
// this one, so the next equal-sized request of this stream reuses it whole.
TEST(AllocatorStreams, AnotherStreamCannotFragmentThisOne) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {500 * MiB}, 0);
  a.release(1);
  a.allocate(2, {150 * MiB}, 2);  // a reduce-scatter input on its own stream
  a.allocate(3, {500 * MiB}, 0);  // the compute stream's activations come back
  EXPECT_EQ(a.reserved(), 650 * MiB);
  EXPECT_EQ(layout(a, 0), (std::vector<std::pair<int64_t, bool>>{{500 * MiB, true}}));
}

TEST(AllocatorStreams, AReleaseOfTheCacheCoversEveryStream) {
  CachingAllocator a(with_capacity(100 * MiB));
  a.allocate(1, {40 * MiB}, 1);
  a.allocate(2, {40 * MiB}, 2);
  a.release(1);
  a.release(2);
  EXPECT_TRUE(a.allocate(3, {90 * MiB}, 0));
  EXPECT_EQ(a.reserved(), 90 * MiB);
  EXPECT_EQ(a.last_cost().released_segments, 2);
}

// record_stream: allocated drops at the free, the block is reused only after
// its event; a release of the cache synchronizes on the events first.
TEST(AllocatorPending, PendingBlocksAreFreedByTheirEventOrByAFlush) {
  CachingAllocator a(with_capacity(100 * MiB));
  a.allocate(1, {60 * MiB});
  a.release_pending(1);
  EXPECT_EQ(a.allocated(), 0);
  EXPECT_EQ(a.reserved(), 60 * MiB);
  EXPECT_TRUE(a.snapshot()[0].blocks[0].pending_free);
  a.allocate(2, {30 * MiB});  // cannot use the pending block: a new segment
  EXPECT_EQ(a.reserved(), 90 * MiB);
  a.complete_pending();
  a.allocate(3, {60 * MiB});  // the event completed: reused
  EXPECT_EQ(a.reserved(), 90 * MiB);
  a.release_pending(3);
  // 40 MiB fits no free block; 90 + 40 > 100: the flush frees the pending
  // block first, then releases it as a whole unused segment.
  EXPECT_TRUE(a.allocate(4, {40 * MiB}));
  EXPECT_EQ(a.last_cost().flushes, 1);
  EXPECT_EQ(a.reserved(), 70 * MiB);
}

// --- expandable segments -----------------------------------------------------

// Upstream maps kLargeBuffer (20 MiB) pages for the large pool and
// kSmallBuffer (2 MiB) pages for the small one (find_expandable_block).
TEST(AllocatorExpandable, SegmentsGrowAPageAtATime) {
  CachingAllocator a(expandable());
  a.allocate(1, {30 * MiB});
  EXPECT_EQ(a.reserved(), 40 * MiB);
  a.allocate(2, {5 * MiB});  // best fit in the mapped 10 MiB left
  EXPECT_EQ(a.reserved(), 40 * MiB);
  a.allocate(3, {30 * MiB});  // 5 MiB free at the end + 25 more: two more pages
  EXPECT_EQ(a.reserved(), 80 * MiB);
  EXPECT_EQ(a.allocated(), 65 * MiB);
  a.allocate(4, {1 * KiB});  // the small pool's own segment, 2 MiB pages
  EXPECT_EQ(a.reserved(), 82 * MiB);
  const auto segments = a.snapshot();
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_TRUE(segments[0].expandable);
  EXPECT_EQ(segments[0].blocks[0].size, 30 * MiB);
  EXPECT_EQ(segments[0].blocks[1].size, 5 * MiB);
  EXPECT_EQ(segments[0].blocks[2].address, segments[0].address + 35 * MiB);
  EXPECT_EQ(segments[0].blocks[2].size, 30 * MiB);
}

// The fragmentation of the example below OOMs without expandable segments
// (a partly used segment cannot be given back) and fits with them: the
// release unmaps the free page inside the segment and maps it at the end.
TEST(AllocatorExpandable, UnmappingFreePagesAvoidsTheOom) {
  for (const bool expand : {false, true}) {
    AllocatorOptions options = expand ? expandable(100 * MiB) : with_capacity(100 * MiB);
    CachingAllocator a(options);
    a.allocate(1, {40 * MiB});
    a.allocate(2, {20 * MiB});
    a.release(1);
    a.allocate(3, {20 * MiB});  // best fit: the first 20 MiB of the freed 40
    const bool fits = a.allocate(4, {60 * MiB});
    EXPECT_EQ(a.last_cost().flushes, 1);
    EXPECT_EQ(a.allocated(), 100 * MiB);
    EXPECT_EQ(fits, expand) << (expand ? "expandable" : "default");
    EXPECT_EQ(a.reserved(), expand ? 100 * MiB : 120 * MiB);
    if (expand) {
      EXPECT_EQ(a.last_cost().released_segments, 1);
    }
  }
}

TEST(AllocatorExpandable, PartialPagesOfAFreeBlockStayMapped) {
  CachingAllocator a(expandable(60 * MiB));
  a.allocate(1, {10 * MiB});
  a.allocate(2, {25 * MiB});   // [10, 35)
  a.allocate(3, {5 * MiB});    // [35, 40)
  a.release(2);                // free [10, 35) covers no whole page of [0, 20), [20, 40)
  const bool fits = a.allocate(4, {40 * MiB});  // 40 + 40 > 60: the release unmaps nothing: OOM
  EXPECT_FALSE(fits);
  EXPECT_EQ(a.last_cost().released_segments, 0);
}

TEST(AllocatorIds, OneIdOwnsSeveralPieces) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {4 * MiB, 4 * MiB, 300 * KiB});  // both 4 MiB in one 20 MiB segment; 300 KiB small
  EXPECT_EQ(a.allocated(), 8 * MiB + 300 * KiB);
  EXPECT_EQ(a.reserved(), 22 * MiB);
  EXPECT_EQ(layout(a, 0), (std::vector<std::pair<int64_t, bool>>{
                              {4 * MiB, true}, {4 * MiB, true}, {12 * MiB, false}}));
  a.allocate(1, {5 * MiB});  // a later call adds to the same id
  a.allocate(2, {1 * MiB + 512});
  a.release(1);
  EXPECT_EQ(a.allocated(), 1 * MiB + 512);
  EXPECT_EQ(a.reserved(), 22 * MiB);
  EXPECT_EQ(a.peak_allocated(), 13 * MiB + 300 * KiB + 1 * MiB + 512);
  EXPECT_THROW(a.release(1), InternalError);
  EXPECT_THROW(a.release(42), InternalError);
}

TEST(AllocatorIds, ResetPeaksRestartsFromTheCurrentValues) {
  CachingAllocator a(AllocatorOptions{});
  a.allocate(1, {100 * MiB});
  a.allocate(2, {50 * MiB});
  a.release(1);
  a.reset_peaks();
  EXPECT_EQ(a.peak_allocated(), 50 * MiB);
  EXPECT_EQ(a.peak_reserved(), 150 * MiB);
}

// Unit gathers of 64 MiB with the next unit prefetched: freed right after the
// compute (ragged: explicit stream dependencies) two units coexist; freed
// under record_stream, a unit's block is reused only once the all-gather
// stream has passed its next op: allocated holds two units (PyTorch counts a
// freed block out of memory_allocated at once), reserved three.
TEST(MemoryEffects, RecordStreamDelayedFreeHoldsAThirdUnit) {
  constexpr int units = 8;
  constexpr int64_t unit_bytes = 64 * MiB;
  for (const bool delayed : {false, true}) {
    CachingAllocator a(AllocatorOptions{});
    a.allocate(0, {unit_bytes});
    for (int u = 0; u < units; ++u) {
      if (u + 1 < units) a.allocate(u + 1, {unit_bytes});  // prefetch: the next unit's all-gather
      if (delayed) a.complete_pending();  // the all-gather stream has passed its next op
      // ... unit u computes ...
      if (delayed) {
        a.release_pending(u);
      } else {
        a.release(u);
      }
    }
    a.complete_pending();
    EXPECT_EQ(a.peak_allocated(), 2 * unit_bytes) << (delayed ? "record_stream" : "explicit dependency");
    // Equal sizes: every freed segment is reused whole.
    EXPECT_EQ(a.peak_reserved(), (delayed ? 3 : 2) * unit_bytes) << (delayed ? "record_stream" : "explicit dependency");
    EXPECT_EQ(a.allocated(), 0);
  }
}

// One unit's tensors: three 6 MiB matrices, two 300 KiB vectors, a 50 MiB
// embedding. Per-tensor pieces (FSDP2 copies, ZeRO-3) fill a 20 MiB medium
// segment, a small segment and a 50 MiB one; one contiguous buffer (ragged,
// Megatron-FSDP) is one segment rounded to 2 MiB.
TEST(MemoryEffects, PerParameterPiecesVersusOneContiguousBuffer) {
  const std::vector<int64_t> tensors = {6 * MiB, 6 * MiB, 6 * MiB, 300 * KiB, 300 * KiB, 50 * MiB};
  CachingAllocator pieces(AllocatorOptions{});
  pieces.allocate(1, tensors);
  EXPECT_EQ(pieces.allocated(), 68 * MiB + 600 * KiB);
  EXPECT_EQ(pieces.reserved(), (20 + 2 + 50) * MiB);
  CachingAllocator contiguous(AllocatorOptions{});
  int64_t total = 0;
  for (int64_t t : tensors) total += t;
  contiguous.allocate(1, {total});
  EXPECT_EQ(contiguous.allocated(), 68 * MiB + 600 * KiB);
  EXPECT_EQ(contiguous.reserved(), 70 * MiB);
}

}  // namespace
}  // namespace ragged::sim
