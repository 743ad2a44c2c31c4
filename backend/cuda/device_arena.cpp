// The device arena: one allocation, carved by offsets.

#include "backend/cuda/device_arena.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <limits>

#include "backend/cuda/cuda_check.hpp"
#include "common/errors.hpp"
#include "common/units.hpp"

namespace ragged::backend::gpu {

std::size_t BumpAllocator::allocate(std::size_t bytes, std::size_t alignment) {
  RAGGED_ASSERT(alignment > 0 && (alignment & (alignment - 1)) == 0, "arena alignment must be a power of two");
  const std::size_t start = (used_ + alignment - 1) & ~(alignment - 1);
  if (start < used_ || start > capacity_ || bytes > capacity_ - start) {
    throw InputError(
        fmt::format("device arena exhausted: {} requested with {} of {} in use; give the arena more memory",
                    format_bytes(static_cast<double>(bytes)), format_bytes(static_cast<double>(used_)),
                    format_bytes(static_cast<double>(capacity_))));
  }
  used_ = start + bytes;
  if (used_ > high_water_mark_) high_water_mark_ = used_;
  return start;
}

DeviceArena::DeviceArena(std::size_t bytes) : offsets_(bytes) {
  if (bytes == 0) return;
  void* pointer = nullptr;
  CUDA_CHECK(cudaMalloc(&pointer, bytes));
  base_ = static_cast<std::byte*>(pointer);
}

DeviceArena::~DeviceArena() {
  if (base_ != nullptr) cudaFree(base_);  // no throwing from a destructor
}

void* DeviceArena::allocate(std::size_t bytes, std::size_t alignment) {
  return base_ + offsets_.allocate(bytes, alignment);
}

std::size_t DeviceArena::checked_bytes(int64_t count, std::size_t element_size) {
  RAGGED_ASSERT(count >= 0, "arena arrays have a non-negative length");
  const auto elements = static_cast<std::size_t>(count);
  if (elements > std::numeric_limits<std::size_t>::max() / element_size) {
    throw InputError(fmt::format("device arena: an array of {} elements of {} bytes overflows", count, element_size));
  }
  return elements * element_size;
}

}  // namespace ragged::backend::gpu
