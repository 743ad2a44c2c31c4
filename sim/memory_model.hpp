#pragma once
// The memory of one rank over a simulated step: allocations and frees from
// the Program's alloc/free ops, through a model of PyTorch's caching
// allocator (reserved memory, reuse per stream, fragmentation, expandable
// segments, the release of the cache and retry near capacity) and the
// allocator effects each strategy is known for (docs/SIMULATOR.md section 8):
// record_stream-delayed frees (FSDP1, FSDP2), per-parameter allocations
// (FSDP2, ZeRO-3), persistent buffers (Megatron-FSDP). Peak allocated and
// reserved; OOM only when a request fails after the cache was released.

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
  int64_t state_and_buffers = 0;  // the executor's count: persistent state + parameter and gradient buffers
};

// The allocator's constants, defaulting to c10/cuda/CUDACachingAllocator.cpp
// (native backend); the names in brackets are the upstream ones.
struct AllocatorOptions {
  int64_t capacity = 0;                  // device memory the allocator may reserve; 0: unlimited
  int64_t small_block = 1 << 20;         // [kSmallSize] requests at or below go to the small pool;
                                         // also the remainder a large block must exceed to be split
  int64_t segment_rounding = 2 << 20;    // [kRoundLarge] large segments are cudaMalloc'ed in multiples of this
  int64_t rounding = 512;                // [kMinBlockSize] every request is rounded up to this;
                                         // also the least remainder a small block is split for
  int64_t small_segment = 2 << 20;       // [kSmallBuffer] the size of every small-pool segment;
                                         // the page of a small-pool expandable segment
  int64_t large_segment = 20 << 20;      // [kLargeBuffer] the segment of a large request below min_large_alloc;
                                         // the page of a large-pool expandable segment
  int64_t min_large_alloc = 10 << 20;    // [kMinLargeAlloc] requests from here on get a segment of their own size
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: one growing segment
  // per stream and pool, mapped and unmapped a page at a time (upstream
  // default: off).
  bool expandable_segments = false;
};

// The time of one driver call the allocator makes while it releases its
// cache and retries (cudaFree of a cached segment, cudaMalloc of the new one;
// with expandable segments an unmap or map of pages). An assumption: about
// 50 us per cudaMalloc from 4 KB to 512 KB was measured on an older GPU
// (University of Virginia, "CUDA support: memory allocation overhead"),
// growing for larger sizes; the device synchronization that precedes the
// calls, which the executor derives from the Program, usually costs more.
// A calibration file measured by ragged-gpu-validate (section (f)) replaces
// it with the device's own cost by size (DriverCallCosts).
inline constexpr double kAllocatorDriverCallSeconds = 50e-6;

// What one allocate() call asked of the driver beyond cached blocks.
struct AllocationCost {
  int64_t new_segments = 0;       // cudaMalloc calls (expandable: page ranges mapped)
  int64_t flushes = 0;            // releases of the cache followed by a retry (upstream num_alloc_retries)
  int64_t released_segments = 0;  // cudaFree calls of those releases (expandable: page ranges unmapped)
  int64_t new_bytes = 0;          // bytes of those cudaMalloc calls (expandable: of the pages mapped)
  int64_t released_bytes = 0;     // bytes of those cudaFree calls (expandable: of the pages unmapped)
  bool out_of_memory = false;     // a piece did not fit even after the release
};

// What the allocator's driver calls cost: a line in the bytes of each call,
// for cudaMalloc and for cudaFree (expandable segments: a map and an unmap of
// pages, taken at the same cost). By default the flat assumption above.
struct DriverCallCosts {
  double malloc_seconds = kAllocatorDriverCallSeconds;
  double malloc_seconds_per_gib = 0;
  double free_seconds = kAllocatorDriverCallSeconds;
  double free_seconds_per_gib = 0;

  // The calls `cost` counts, at these rates.
  double seconds(const AllocationCost& cost) const;
};

// One block of a segment, as torch.cuda.memory_snapshot() lists it.
struct BlockSnapshot {
  int64_t address = 0;
  int64_t size = 0;
  bool allocated = false;
  bool pending_free = false;  // freed under record_stream, not reusable yet ("active_pending_free")
  bool mapped = true;         // expandable segments: pages backing this block are mapped
};

struct SegmentSnapshot {
  int64_t address = 0;  // a simulated device address; segments never overlap
  int64_t size = 0;     // expandable: the virtual extent (only its mapped blocks are reserved)
  bool small_pool = false;
  int stream = 0;
  bool expandable = false;
  std::vector<BlockSnapshot> blocks;  // in address order, covering the segment
};

// A best-fit caching allocator in the style of PyTorch's CUDACachingAllocator:
// freed blocks stay reserved and are reused by later requests of the stream
// they were allocated on, split when larger than needed; a request no cached
// block fits reserves a new segment (or maps pages of its stream's
// expandable segment); when that would pass capacity, the cache is released
// (blocks pending on events first, then every unused segment or page of
// every stream) and the request is retried. Every operation is O(log n) in
// the number of blocks, but a release of the cache, which is O(n).
class CachingAllocator {
 public:
  explicit CachingAllocator(AllocatorOptions options);

  // Allocates `bytes` under `id` (one id may own several pieces) on
  // `stream`. Returns false when even after releasing the cache it does not
  // fit (OOM); the request is then recorded as allocated anyway so accounting
  // continues. Zero-byte pieces take no memory, as in PyTorch.
  bool allocate(int64_t id, const std::vector<int64_t>& pieces, int stream = 0);
  // The driver work of the last allocate() call.
  const AllocationCost& last_cost() const { return last_cost_; }
  // Frees every piece `id` owns; an id that was never allocated is a
  // programmer error.
  void release(int64_t id);
  // Frees `id` under record_stream: allocated drops now, but the blocks are
  // reused only after complete_pending() (the recorded event completed) or a
  // release of the cache (which synchronizes on every outstanding event).
  void release_pending(int64_t id);
  void complete_pending();
  // Peaks restart from the current values (torch.cuda.reset_peak_memory_stats).
  void reset_peaks();

  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }
  int64_t peak_allocated() const { return peak_allocated_; }
  int64_t peak_reserved() const { return peak_reserved_; }
  int64_t flushes() const { return flushes_; }
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
    int stream = 0;
    bool allocated = false;
    bool pending = false;  // freed, waiting for its event
    bool mapped = true;
    bool small = false;
  };
  struct Segment {
    int64_t size = 0;
    bool small = false;
    bool expandable = false;
    int stream = 0;
    int32_t first = kNone;  // the block at the segment's start
  };
  // Cached blocks of one pool by (size, address): lower_bound is best fit
  // with ties to the lowest address, like upstream's BlockComparatorSize.
  using FreeBlocks = std::map<std::pair<int64_t, int64_t>, int32_t>;
  using PoolKey = std::pair<int, bool>;  // (stream, small pool)

  int32_t take_block(int64_t size, int stream);
  int32_t new_segment(int64_t size, bool small, int stream);
  // A segment of `size` at the next address and the one block spanning it
  // (unmapped when expandable); reserves nothing.
  int32_t add_segment(int64_t size, bool small, int stream, bool expandable);
  int32_t expandable_block(int64_t size, bool small, int stream);
  int32_t find_expandable_run(int64_t size, bool small, int stream);
  int64_t pages_to_map(int32_t candidate, int64_t size) const;
  int32_t map_run(int32_t candidate, int64_t size);
  void return_block(int32_t key);
  void flush_cache();
  void release_whole_segments();
  void unmap_free_pages();
  int32_t merge(int32_t key, int32_t other);
  bool reserve(int64_t bytes);
  int64_t segment_size(int64_t size) const;
  int64_t page(bool small) const { return small ? options_.small_segment : options_.large_segment; }
  bool should_split(const Block& block, int64_t size) const;
  void split(int32_t key, int64_t size);
  int32_t new_block(const Block& block);
  void drop_block(int32_t key);
  FreeBlocks& pool(const Block& block) { return pools_[{block.stream, block.small}]; }
  void insert_free(int32_t key);
  void erase_free(int32_t key);
  void note_peaks();

  AllocatorOptions options_;
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  int64_t flushes_ = 0;
  bool oom_ = false;
  AllocationCost last_cost_;
  std::unordered_map<int64_t, std::vector<int32_t>> owned_;  // id -> its blocks
  std::vector<int32_t> pending_;     // blocks freed under record_stream
  std::vector<Block> blocks_;        // every block, indexed by key; spare keys are reused
  std::vector<int32_t> spare_keys_;
  std::map<PoolKey, FreeBlocks> pools_;
  std::unordered_set<int32_t> free_segments_;  // cached blocks that are whole (non-expandable) segments
  std::map<PoolKey, std::map<int64_t, int32_t>> unmapped_;  // expandable: unmapped blocks by address
  std::map<PoolKey, int64_t> expandable_segments_;           // expandable: the segment of each pool
  std::map<int64_t, Segment> segments_;  // by address
  int64_t next_address_ = 0;
};

}  // namespace ragged::sim
