// The heap policy of the ragged binaries: a block of a few MiB comes from the
// heap, and once freed the heap keeps it (the program break does not fall back).

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <malloc.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/heap_policy.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RAGGED_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define RAGGED_SANITIZED_ALLOCATOR 1
#endif
#endif

namespace ragged {
namespace {

TEST(HeapPolicy, AFreedBlockOfAFewMiBStaysInTheHeap) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "the policy is glibc's mallopt; this C library is not glibc";
#elif defined(RAGGED_SANITIZED_ALLOCATOR)
  GTEST_SKIP() << "a sanitizer's allocator serves malloc here, not glibc's heap";
#else
  keep_freed_memory_in_the_heap();
  constexpr size_t kBytes = size_t{4} << 20;  // glibc's default serves it with its own mmap
  const size_t mapped_before = mallinfo2().hblkhd;
  void* block = std::malloc(kBytes);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBytes);
  EXPECT_EQ(mallinfo2().hblkhd, mapped_before) << "the block was mapped on its own, not taken from the heap";
  const auto break_now = [] { return reinterpret_cast<uintptr_t>(sbrk(0)); };
  const uintptr_t before_free = break_now();
  std::free(block);
  EXPECT_EQ(break_now(), before_free) << "the heap gave the freed block back to the kernel";
#endif
}

}  // namespace
}  // namespace ragged
