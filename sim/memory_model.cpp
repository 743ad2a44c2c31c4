// The caching allocator model. The rules follow c10/cuda/CUDACachingAllocator.cpp
// (round_size, get_pool, get_allocation_size, get_free_block, should_split,
// free_block's merging, release_cached_blocks) with one stream and no
// expandable segments; docs/SIMULATOR.md lists what is left out.

#include "sim/memory_model.hpp"

#include <algorithm>
#include <limits>

#include "common/errors.hpp"

namespace ragged::sim {

CachingAllocator::CachingAllocator(AllocatorOptions options) : options_(options) {
  RAGGED_ASSERT(options_.capacity >= 0, "allocator capacity must not be negative");
  RAGGED_ASSERT(options_.rounding > 0 && options_.small_block > 0 && options_.segment_rounding > 0 &&
                    options_.small_segment >= options_.small_block &&
                    options_.large_segment >= options_.min_large_alloc,
                "allocator constants must be positive and segments must hold their requests");
}

bool CachingAllocator::allocate(int64_t id, const std::vector<int64_t>& pieces) {
  std::vector<int32_t>& owned = owned_[id];
  bool all_fit = true;
  for (int64_t bytes : pieces) {
    RAGGED_ASSERT(bytes >= 0, "an allocation cannot have a negative size");
    if (bytes == 0) continue;
    const int64_t size = (bytes + options_.rounding - 1) / options_.rounding * options_.rounding;
    bool fits = true;
    owned.push_back(take_block(size, fits));
    all_fit = all_fit && fits;
  }
  return all_fit;
}

void CachingAllocator::release(int64_t id) {
  auto it = owned_.find(id);
  RAGGED_ASSERT(it != owned_.end(), "release of an id that owns no allocation");
  for (int32_t key : it->second) return_block(key);
  owned_.erase(it);
}

void CachingAllocator::reset_peaks() {
  peak_allocated_ = allocated_;
  peak_reserved_ = reserved_;
}

// Best fit in the request's pool; a new segment when nothing cached fits;
// then the block is split when the remainder is worth keeping.
int32_t CachingAllocator::take_block(int64_t size, bool& fits) {
  const bool small = size <= options_.small_block;
  FreeBlocks& cached = pool(small);
  int32_t key = kNone;
  auto it = cached.lower_bound({size, std::numeric_limits<int64_t>::min()});
  if (it != cached.end()) {
    key = it->second;
    cached.erase(it);
    free_segments_.erase(key);
  } else {
    key = new_segment(segment_size(size), small, fits);
  }
  if (should_split(blocks_[key], size)) {
    Block rest = blocks_[key];
    rest.address += size;
    rest.size -= size;
    rest.prev = key;
    const int32_t rest_key = new_block(rest);  // may reallocate blocks_: index again below
    if (rest.next != kNone) blocks_[rest.next].prev = rest_key;
    blocks_[key].next = rest_key;
    blocks_[key].size = size;
    insert_free(rest_key);
  }
  Block& block = blocks_[key];
  block.allocated = true;
  allocated_ += block.size;  // upstream counts the whole block, remainder included when unsplit
  // Per piece: a later piece of the same call may release cached segments.
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return key;
}

// Frees a block and merges it with free neighbours of its segment; the
// merged block stays cached.
void CachingAllocator::return_block(int32_t key) {
  Block& block = blocks_[key];
  RAGGED_ASSERT(block.allocated, "a block was freed twice");
  block.allocated = false;
  allocated_ -= block.size;
  const int32_t prev = block.prev;
  if (prev != kNone && !blocks_[prev].allocated) {
    erase_free(prev);
    blocks_[prev].size += blocks_[key].size;
    blocks_[prev].next = blocks_[key].next;
    if (blocks_[key].next != kNone) blocks_[blocks_[key].next].prev = prev;
    drop_block(key);
    key = prev;
  }
  const int32_t next = blocks_[key].next;
  if (next != kNone && !blocks_[next].allocated) {
    erase_free(next);
    blocks_[key].size += blocks_[next].size;
    blocks_[key].next = blocks_[next].next;
    if (blocks_[next].next != kNone) blocks_[blocks_[next].next].prev = key;
    drop_block(next);
  }
  insert_free(key);
}

// cudaMalloc of a new segment. Past capacity, PyTorch frees every cached
// segment and retries; if that is not enough it raises OOM. The simulator
// records the OOM and reserves the segment anyway, so the peak tells how far
// over capacity the step would go.
int32_t CachingAllocator::new_segment(int64_t size, bool small, bool& fits) {
  const bool limited = options_.capacity > 0;
  if (limited && reserved_ + size > options_.capacity) release_cached_segments();
  if (limited && reserved_ + size > options_.capacity) {
    oom_ = true;
    fits = false;
  }
  const int64_t address = next_address_;
  next_address_ += size;
  reserved_ += size;
  Block block;
  block.address = address;
  block.size = size;
  block.segment = address;
  block.small = small;
  const int32_t key = new_block(block);
  segments_.emplace(address, Segment{size, small, key});
  return key;
}

void CachingAllocator::release_cached_segments() {
  for (int32_t key : free_segments_) {
    const Block& block = blocks_[key];
    pool(block.small).erase({block.size, block.address});
    reserved_ -= block.size;
    segments_.erase(block.segment);
    drop_block(key);
  }
  free_segments_.clear();
}

int64_t CachingAllocator::segment_size(int64_t size) const {
  if (size <= options_.small_block) return options_.small_segment;
  if (size < options_.min_large_alloc) return options_.large_segment;
  return (size + options_.segment_rounding - 1) / options_.segment_rounding * options_.segment_rounding;
}

bool CachingAllocator::should_split(const Block& block, int64_t size) const {
  const int64_t remaining = block.size - size;
  return block.small ? remaining >= options_.rounding : remaining > options_.small_block;
}

int32_t CachingAllocator::new_block(const Block& block) {
  if (spare_keys_.empty()) {
    RAGGED_ASSERT(blocks_.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()),
                  "too many allocator blocks");
    blocks_.push_back(block);
    return static_cast<int32_t>(blocks_.size() - 1);
  }
  const int32_t key = spare_keys_.back();
  spare_keys_.pop_back();
  blocks_[key] = block;
  return key;
}

void CachingAllocator::drop_block(int32_t key) { spare_keys_.push_back(key); }

// A cached block without neighbours is a whole unused segment, which
// release_cached_segments may give back.
void CachingAllocator::insert_free(int32_t key) {
  const Block& block = blocks_[key];
  pool(block.small).emplace(std::pair{block.size, block.address}, key);
  if (block.prev == kNone && block.next == kNone) free_segments_.insert(key);
}

void CachingAllocator::erase_free(int32_t key) {
  const Block& block = blocks_[key];
  pool(block.small).erase({block.size, block.address});
  free_segments_.erase(key);
}

std::vector<SegmentSnapshot> CachingAllocator::snapshot() const {
  std::vector<SegmentSnapshot> out;
  out.reserve(segments_.size());
  for (const auto& [address, segment] : segments_) {
    SegmentSnapshot& s = out.emplace_back();
    s.address = address;
    s.size = segment.size;
    s.small_pool = segment.small;
    for (int32_t key = segment.first; key != kNone; key = blocks_[key].next) {
      const Block& block = blocks_[key];
      s.blocks.push_back({block.address, block.size, block.allocated});
    }
  }
  return out;
}

}  // namespace ragged::sim
