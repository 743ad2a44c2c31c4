#pragma once
// The memory of one rank over a simulated step: allocations and frees from
// the Program's alloc/free ops, through a model of PyTorch's caching
// allocator (reserved memory, reuse, fragmentation) and the allocator effects
// each strategy is known for (docs/SIMULATOR.md): record_stream-delayed frees
// (FSDP1, FSDP2), per-parameter allocations (FSDP2, ZeRO-3), persistent
// buffers (Megatron-FSDP). Peak allocated and reserved; OOM past capacity.

#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ragged::sim {

struct MemorySample {
  double time_s = 0;
  int64_t allocated = 0;
  int64_t reserved = 0;
};

// The allocator's constants, defaulting to c10/cuda/CUDACachingAllocator.cpp
// (native backend, no expandable segments); the names in brackets are the
// upstream ones.
struct AllocatorOptions {
  int64_t capacity = 0;                  // device memory the allocator may reserve; 0: unlimited
  int64_t small_block = 1 << 20;         // [kSmallSize] requests at or below go to the small pool;
                                         // also the remainder a large block must exceed to be split
  int64_t segment_rounding = 2 << 20;    // [kRoundLarge] large segments are cudaMalloc'ed in multiples of this
  int64_t rounding = 512;                // [kMinBlockSize] every request is rounded up to this;
                                         // also the least remainder a small block is split for
  int64_t small_segment = 2 << 20;       // [kSmallBuffer] the size of every small-pool segment
  int64_t large_segment = 20 << 20;      // [kLargeBuffer] the segment of a large request below min_large_alloc
  int64_t min_large_alloc = 10 << 20;    // [kMinLargeAlloc] requests from here on get a segment of their own size
};

// One block of a segment, as torch.cuda.memory_snapshot() lists it.
struct BlockSnapshot {
  int64_t address = 0;
  int64_t size = 0;
  bool allocated = false;
};

struct SegmentSnapshot {
  int64_t address = 0;  // a simulated device address; segments never overlap
  int64_t size = 0;
  bool small_pool = false;
  std::vector<BlockSnapshot> blocks;  // in address order, covering the segment
};

// A best-fit caching allocator in the style of PyTorch's CUDACachingAllocator
// (no expandable segments): freed blocks stay reserved and are reused, split
// when larger than needed; a request no cached block fits reserves a new
// segment; when that would pass capacity, unused segments are released first.
// Every operation is O(log n) in the number of blocks (releasing k cached
// segments under capacity pressure: O(k log n)).
class CachingAllocator {
 public:
  explicit CachingAllocator(AllocatorOptions options);

  // Allocates `bytes` under `id` (one id may own several pieces). Returns
  // false when even after releasing the cache it does not fit (OOM); the
  // request is then recorded as allocated anyway so accounting continues.
  // Zero-byte pieces take no memory, as in PyTorch.
  bool allocate(int64_t id, const std::vector<int64_t>& pieces);
  // Frees every piece `id` owns; an id that was never allocated is a
  // programmer error.
  void release(int64_t id);
  // Peaks restart from the current values (torch.cuda.reset_peak_memory_stats).
  void reset_peaks();

  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }
  int64_t peak_allocated() const { return peak_allocated_; }
  int64_t peak_reserved() const { return peak_reserved_; }
  bool out_of_memory() const { return oom_; }
  // The segments in address order with their blocks (for tests and plots; O(n)).
  std::vector<SegmentSnapshot> snapshot() const;

 private:
  static constexpr int32_t kNone = -1;
  struct Block {
    int64_t address = 0;
    int64_t size = 0;
    int64_t segment = 0;  // the address of its segment
    int32_t prev = kNone, next = kNone;  // neighbours inside the segment
    bool allocated = false;
    bool small = false;
  };
  struct Segment {
    int64_t size = 0;
    bool small = false;
    int32_t first = kNone;  // the block at the segment's start
  };
  // Cached blocks of one pool by (size, address): lower_bound is best fit
  // with ties to the lowest address, like upstream's BlockComparatorSize.
  using FreeBlocks = std::map<std::pair<int64_t, int64_t>, int32_t>;

  int32_t take_block(int64_t size, bool& fits);
  void return_block(int32_t key);
  int32_t new_segment(int64_t size, bool small, bool& fits);
  void release_cached_segments();
  int64_t segment_size(int64_t size) const;
  bool should_split(const Block& block, int64_t size) const;
  int32_t new_block(const Block& block);
  void drop_block(int32_t key);
  FreeBlocks& pool(bool small) { return small ? free_small_ : free_large_; }
  void insert_free(int32_t key);
  void erase_free(int32_t key);

  AllocatorOptions options_;
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  bool oom_ = false;
  std::unordered_map<int64_t, std::vector<int32_t>> owned_;  // id -> its blocks
  std::vector<Block> blocks_;        // every block, indexed by key; spare keys are reused
  std::vector<int32_t> spare_keys_;
  FreeBlocks free_small_, free_large_;
  std::unordered_set<int32_t> free_segments_;  // cached blocks that are whole segments
  std::map<int64_t, Segment> segments_;  // by address
  int64_t next_address_ = 0;
};

}  // namespace ragged::sim
