#pragma once
// Device memory for a run: one cudaMalloc, carved by offsets. The Program
// knows every buffer's size up front, so a bump allocator is enough: buffers
// are handed out in order and the whole arena is reset between steps (or
// between the benchmarks of gpu-validate). The high-water mark says how much
// of the arena a run actually needed.

#include <cstddef>
#include <cstdint>

namespace ragged::backend::gpu {

// The offsets of a bump allocator, without any memory behind them (so that
// the carving is tested on machines without a GPU).
class BumpAllocator {
 public:
  explicit BumpAllocator(std::size_t capacity) : capacity_(capacity) {}

  // Offset of a new block of `bytes`, aligned to `alignment` (a power of
  // two). Throws InputError when the block does not fit, naming the request
  // and what is used and free.
  std::size_t allocate(std::size_t bytes, std::size_t alignment = kDefaultAlignment);
  // Forgets every block; the high-water mark stays.
  void reset() { used_ = 0; }

  std::size_t capacity() const { return capacity_; }
  std::size_t used() const { return used_; }
  std::size_t high_water_mark() const { return high_water_mark_; }

  // cudaMalloc aligns to 256 bytes; so does the arena, which keeps every
  // buffer aligned for vector loads and for cuBLAS.
  static constexpr std::size_t kDefaultAlignment = 256;

 private:
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::size_t high_water_mark_ = 0;
};

// One cudaMalloc of `bytes` on the current device, carved by a BumpAllocator.
class DeviceArena {
 public:
  explicit DeviceArena(std::size_t bytes);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  void* allocate(std::size_t bytes, std::size_t alignment = BumpAllocator::kDefaultAlignment);
  template <typename T>
  T* allocate_array(int64_t count) {
    return static_cast<T*>(allocate(checked_bytes(count, sizeof(T))));
  }
  void reset() { offsets_.reset(); }

  std::byte* base() const { return base_; }
  std::size_t capacity() const { return offsets_.capacity(); }
  std::size_t used() const { return offsets_.used(); }
  std::size_t high_water_mark() const { return offsets_.high_water_mark(); }

 private:
  static std::size_t checked_bytes(int64_t count, std::size_t element_size);

  std::byte* base_ = nullptr;
  BumpAllocator offsets_;
};

}  // namespace ragged::backend::gpu
