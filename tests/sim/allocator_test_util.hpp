#pragma once
// What the caching allocator's tests share: byte units and allocator options.

#include <cstdint>

#include "sim/memory_model.hpp"

namespace ragged::sim::allocator_test {

inline constexpr int64_t KiB = 1024;
inline constexpr int64_t MiB = 1024 * KiB;
inline constexpr int64_t GiB = 1024 * MiB;

inline AllocatorOptions with_capacity(int64_t capacity) {
  AllocatorOptions options;
  options.capacity = capacity;
  return options;
}

// The same with expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True).
inline AllocatorOptions expandable(int64_t capacity = 0) {
  AllocatorOptions options = with_capacity(capacity);
  options.expandable_segments = true;
  return options;
}

}  // namespace ragged::sim::allocator_test
