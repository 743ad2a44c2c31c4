// The caching allocator model. The rules follow c10/cuda/CUDACachingAllocator.cpp
// (round_size, get_pool, get_allocation_size, get_free_block, should_split,
// free_block's merging, malloc's release of the cache and retry,
// release_cached_blocks with synchronize_and_free_events, and the expandable
// segments' find_expandable_block, map_block and unmap_block);
// docs/SIMULATOR.md section 8 lists what is left out.

#include "sim/memory_model.hpp"

#include <algorithm>
#include <limits>

#include "common/errors.hpp"
#include "common/units.hpp"

namespace ragged::sim {
namespace {

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }
int64_t round_down(int64_t value, int64_t multiple) { return value / multiple * multiple; }

// The virtual extent of an expandable segment, in pages. Upstream reserves
// 9/8 of the device's memory; the model reserves so much more that only
// mapped pages ever matter.
constexpr int64_t kExpandablePages = int64_t{1} << 20;

}  // namespace

double DriverCallCosts::seconds(const AllocationCost& cost) const {
  return static_cast<double>(cost.new_segments) * malloc_seconds +
         static_cast<double>(cost.new_bytes) / kGiB * malloc_seconds_per_gib +
         static_cast<double>(cost.released_segments) * free_seconds +
         static_cast<double>(cost.released_bytes) / kGiB * free_seconds_per_gib;
}

CachingAllocator::CachingAllocator(AllocatorOptions options) : options_(options) {
  RAGGED_ASSERT(options_.capacity >= 0, "allocator capacity must not be negative");
  RAGGED_ASSERT(options_.rounding > 0 && options_.small_block > 0 && options_.segment_rounding > 0 &&
                    options_.small_segment >= options_.small_block &&
                    options_.large_segment >= options_.min_large_alloc,
                "allocator constants must be positive and segments must hold their requests");
}

bool CachingAllocator::allocate(int64_t id, const std::vector<int64_t>& pieces, int stream) {
  last_cost_ = {};
  std::vector<int32_t>& owned = owned_[id];
  for (int64_t bytes : pieces) {
    RAGGED_ASSERT(bytes >= 0, "an allocation cannot have a negative size");
    if (bytes == 0) continue;
    owned.push_back(take_block(round_up(bytes, options_.rounding), stream));
  }
  return !last_cost_.out_of_memory;
}

void CachingAllocator::release(int64_t id) {
  auto it = owned_.find(id);
  RAGGED_ASSERT(it != owned_.end(), "release of an id that owns no allocation");
  for (int32_t key : it->second) {
    RAGGED_ASSERT(blocks_[key].allocated, "a block was freed twice");
    allocated_ -= blocks_[key].size;
    return_block(key);
  }
  owned_.erase(it);
}

void CachingAllocator::release_pending(int64_t id) {
  auto it = owned_.find(id);
  RAGGED_ASSERT(it != owned_.end(), "release of an id that owns no allocation");
  for (int32_t key : it->second) {
    Block& block = blocks_[key];
    RAGGED_ASSERT(block.allocated, "a block was freed twice");
    allocated_ -= block.size;  // memory_allocated drops at the free; the block waits for its event
    block.allocated = false;
    block.pending = true;
    pending_.push_back(key);
  }
  owned_.erase(it);
}

void CachingAllocator::complete_pending() {
  std::vector<int32_t> done;
  done.swap(pending_);
  for (int32_t key : done) return_block(key);
}

void CachingAllocator::reset_peaks() {
  peak_allocated_ = allocated_;
  peak_reserved_ = reserved_;
}

void CachingAllocator::note_peaks() {
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

// Best fit in the request's pool of its stream; a new segment (or mapped
// pages) when nothing cached fits; then the block is split when the
// remainder is worth keeping.
int32_t CachingAllocator::take_block(int64_t size, int stream) {
  const bool small = size <= options_.small_block;
  FreeBlocks& cached = pools_[{stream, small}];
  int32_t key = kNone;
  auto it = cached.lower_bound({size, std::numeric_limits<int64_t>::min()});
  if (it != cached.end()) {
    key = it->second;
    cached.erase(it);
    free_segments_.erase(key);
  } else if (options_.expandable_segments) {
    key = expandable_block(size, small, stream);
  } else {
    key = new_segment(segment_size(size), small, stream);
  }
  if (should_split(blocks_[key], size)) split(key, size);
  Block& block = blocks_[key];
  block.allocated = true;
  allocated_ += block.size;  // upstream counts the whole block, remainder included when unsplit
  // Per piece: a later piece of the same call may release cached segments.
  note_peaks();
  return key;
}

// Cuts `size` off the front of free block `key`; the rest becomes a cached block.
void CachingAllocator::split(int32_t key, int64_t size) {
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

bool CachingAllocator::reserve(int64_t bytes) {
  if (options_.capacity > 0 && reserved_ + bytes > options_.capacity) return false;
  reserved_ += bytes;
  return true;
}

// malloc's last resort: synchronize on every outstanding event, give back
// every unused segment (or page) of every stream, and let the caller retry.
void CachingAllocator::flush_cache() {
  ++last_cost_.flushes;
  ++flushes_;
  complete_pending();
  if (options_.expandable_segments) {
    unmap_free_pages();
  } else {
    release_whole_segments();
  }
}

// cudaMalloc of a new segment. Past capacity, PyTorch releases its cache and
// retries; if that is not enough it raises OOM. The simulator records the
// OOM and reserves the segment anyway, so the peak tells how far over
// capacity the step would go.
int32_t CachingAllocator::new_segment(int64_t size, bool small, int stream) {
  if (!reserve(size)) {
    flush_cache();
    if (!reserve(size)) {
      oom_ = last_cost_.out_of_memory = true;
      reserved_ += size;
    }
  }
  ++last_cost_.new_segments;
  last_cost_.new_bytes += size;
  return add_segment(size, small, stream, false);
}

int32_t CachingAllocator::add_segment(int64_t size, bool small, int stream, bool expandable) {
  const int64_t address = next_address_;
  next_address_ += size;
  Block block;
  block.address = address;
  block.size = size;
  block.segment = address;
  block.small = small;
  block.stream = stream;
  block.mapped = !expandable;
  const int32_t key = new_block(block);
  segments_.emplace(address, Segment{size, small, expandable, stream, key});
  return key;
}

void CachingAllocator::release_whole_segments() {
  for (int32_t key : free_segments_) {
    const Block& block = blocks_[key];
    pool(block).erase({block.size, block.address});
    reserved_ -= block.size;
    segments_.erase(block.segment);
    drop_block(key);
    ++last_cost_.released_segments;
    last_cost_.released_bytes += block.size;
  }
  free_segments_.clear();
}

// --- expandable segments ---------------------------------------------------

// A free block of at least `size` made of mapped pages of the stream's
// expandable segment: its free space plus newly mapped pages. Past capacity
// the cache is released (unmapping every page no block uses) and the search
// runs again on the new layout.
int32_t CachingAllocator::expandable_block(int64_t size, bool small, int stream) {
  int32_t candidate = find_expandable_run(size, small, stream);
  int64_t need = pages_to_map(candidate, size);
  if (!reserve(need)) {
    flush_cache();
    candidate = find_expandable_run(size, small, stream);
    need = pages_to_map(candidate, size);
    if (!reserve(need)) {
      oom_ = last_cost_.out_of_memory = true;
      reserved_ += need;
    }
  }
  return map_run(candidate, size);
}

// upstream find_expandable_block: the lowest unmapped block (with the free
// block just before it) that starts a run of free or unmapped address space
// of at least `size`. The segment's unmapped tail always is one.
int32_t CachingAllocator::find_expandable_run(int64_t size, bool small, int stream) {
  const PoolKey key{stream, small};
  if (!expandable_segments_.count(key)) {
    const int32_t first = add_segment(page(small) * kExpandablePages, small, stream, true);
    const int64_t address = blocks_[first].address;
    unmapped_[key].emplace(address, first);
    expandable_segments_.emplace(key, address);
  }
  auto allocatable = [&](int32_t b) { return b != kNone && !blocks_[b].allocated && !blocks_[b].pending; };
  for (const auto& [address, unmapped] : unmapped_[key]) {
    int32_t start = allocatable(blocks_[unmapped].prev) ? blocks_[unmapped].prev : unmapped;
    int64_t bytes = 0;
    for (int32_t b = start; bytes < size && allocatable(b); b = blocks_[b].next) bytes += blocks_[b].size;
    if (bytes >= size) return start;
  }
  RAGGED_ASSERT(false, "an expandable segment always has an unmapped tail");
  return kNone;
}

// Bytes of pages map_run will map: each unmapped block of the run maps what
// the request still lacks, rounded up to whole pages.
int64_t CachingAllocator::pages_to_map(int32_t candidate, int64_t size) const {
  const int64_t page_bytes = page(blocks_[candidate].small);
  int64_t have = 0, need = 0;
  for (int32_t b = candidate; have < size; b = blocks_[b].next) {
    if (blocks_[b].mapped) {
      have += blocks_[b].size;
    } else {
      const int64_t mapped = std::min(blocks_[b].size, round_up(size - have, page_bytes));
      need += mapped;
      have += mapped;
    }
  }
  return need;
}

// upstream map_block, over the run: maps the pages and merges the run (and a
// free block right after it) into one free block, which it returns. The
// pages were already counted in reserved by expandable_block.
int32_t CachingAllocator::map_run(int32_t candidate, int64_t size) {
  const PoolKey key{blocks_[candidate].stream, blocks_[candidate].small};
  const int64_t page_bytes = page(key.second);
  int32_t run = kNone;
  int32_t b = candidate;
  while (true) {
    if (blocks_[b].mapped) {
      erase_free(b);
    } else {
      const int64_t have = run == kNone ? 0 : blocks_[run].size;
      const int64_t mapped = std::min(blocks_[b].size, round_up(size - have, page_bytes));
      unmapped_[key].erase(blocks_[b].address);
      if (mapped < blocks_[b].size) {  // the rest of the address space stays unmapped
        Block rest = blocks_[b];
        rest.address += mapped;
        rest.size -= mapped;
        rest.prev = b;
        const int32_t rest_key = new_block(rest);
        if (rest.next != kNone) blocks_[rest.next].prev = rest_key;
        blocks_[b].next = rest_key;
        blocks_[b].size = mapped;
        unmapped_[key].emplace(blocks_[rest_key].address, rest_key);
      }
      blocks_[b].mapped = true;
      ++last_cost_.new_segments;
      last_cost_.new_bytes += mapped;
    }
    run = run == kNone ? b : merge(run, b);
    if (blocks_[run].size >= size) break;
    b = blocks_[run].next;
    RAGGED_ASSERT(b != kNone, "an expandable run ended before it held the request");
  }
  const int32_t next = blocks_[run].next;
  if (next != kNone && blocks_[next].mapped && !blocks_[next].allocated && !blocks_[next].pending) {
    erase_free(next);
    run = merge(run, next);
  }
  return run;
}

// upstream unmap_block for every cached block: the pages lying wholly inside
// a free block are unmapped (and merged with unmapped neighbours); the
// partial pages at its ends stay mapped and cached.
void CachingAllocator::unmap_free_pages() {
  std::vector<int32_t> free_blocks;
  for (const auto& [key, cached] : pools_) {
    for (const auto& [size_address, block] : cached) free_blocks.push_back(block);
  }
  for (int32_t key : free_blocks) {
    const Block block = blocks_[key];
    const int64_t page_bytes = page(block.small);
    const int64_t begin = block.segment + round_up(block.address - block.segment, page_bytes);
    const int64_t end = block.segment + round_down(block.address + block.size - block.segment, page_bytes);
    if (end <= begin) continue;
    erase_free(key);
    int32_t unmapped = key;
    if (begin > block.address) {  // keep the head mapped and cached
      split(key, begin - block.address);
      unmapped = blocks_[key].next;
      erase_free(unmapped);
      insert_free(key);
    }
    if (end < block.address + block.size) {  // keep the tail mapped and cached
      split(unmapped, end - begin);
    }
    blocks_[unmapped].mapped = false;
    reserved_ -= end - begin;
    ++last_cost_.released_segments;
    last_cost_.released_bytes += end - begin;
    std::map<int64_t, int32_t>& holes = unmapped_[{block.stream, block.small}];
    const int32_t prev = blocks_[unmapped].prev;
    if (prev != kNone && !blocks_[prev].mapped) {
      holes.erase(blocks_[prev].address);
      unmapped = merge(prev, unmapped);
    }
    const int32_t next = blocks_[unmapped].next;
    if (next != kNone && !blocks_[next].mapped) {
      holes.erase(blocks_[next].address);
      unmapped = merge(unmapped, next);
    }
    holes.emplace(blocks_[unmapped].address, unmapped);
  }
}

// --- blocks ------------------------------------------------------------------

// Block `other`, right after `key` in their segment, joins `key`.
int32_t CachingAllocator::merge(int32_t key, int32_t other) {
  RAGGED_ASSERT(blocks_[key].next == other, "only neighbours merge");
  blocks_[key].size += blocks_[other].size;
  blocks_[key].next = blocks_[other].next;
  if (blocks_[other].next != kNone) blocks_[blocks_[other].next].prev = key;
  drop_block(other);
  return key;
}

// A freed block merges with free neighbours of its segment and stays cached.
void CachingAllocator::return_block(int32_t key) {
  blocks_[key].allocated = false;
  blocks_[key].pending = false;
  auto free = [&](int32_t b) {
    return b != kNone && blocks_[b].mapped && !blocks_[b].allocated && !blocks_[b].pending;
  };
  const int32_t prev = blocks_[key].prev;
  if (free(prev)) {
    erase_free(prev);
    key = merge(prev, key);
  }
  const int32_t next = blocks_[key].next;
  if (free(next)) {
    erase_free(next);
    key = merge(key, next);
  }
  insert_free(key);
}

int64_t CachingAllocator::segment_size(int64_t size) const {
  if (size <= options_.small_block) return options_.small_segment;
  if (size < options_.min_large_alloc) return options_.large_segment;
  return round_up(size, options_.segment_rounding);
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
// release_whole_segments may give back.
void CachingAllocator::insert_free(int32_t key) {
  const Block& block = blocks_[key];
  pool(block).emplace(std::pair{block.size, block.address}, key);
  if (block.prev == kNone && block.next == kNone && !segments_.at(block.segment).expandable) free_segments_.insert(key);
}

void CachingAllocator::erase_free(int32_t key) {
  const Block& block = blocks_[key];
  pool(block).erase({block.size, block.address});
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
    s.stream = segment.stream;
    s.expandable = segment.expandable;
    for (int32_t key = segment.first; key != kNone; key = blocks_[key].next) {
      const Block& block = blocks_[key];
      s.blocks.push_back({block.address, block.size, block.allocated, block.pending, block.mapped});
    }
  }
  return out;
}

}  // namespace ragged::sim
