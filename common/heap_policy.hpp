#pragma once
// The heap policy of every Ragged process: freed memory stays in the heap for
// the next allocation of its size.
//
// glibc's defaults give the freed top of the heap back to the kernel once more
// than 128 KiB is free there, and serve blocks from 128 KiB on (a threshold it
// raises as such blocks are freed, up to 32 MiB) with their own mmap. Ragged's
// work allocates and drops such blocks in a loop: the host executor's
// activations and gradients every op, a RaggedShard of a large world per
// tensor. Each round trip then costs a brk or munmap (a TLB shootdown on every
// core: an interrupt per core in a virtual machine), and fresh zero pages
// faulted in one by one when the memory comes back. On the 2-core build
// machine a 4-rank host run of tiny-llama-4xcpu took 4.5 s of wall time and
// 6.1 s of CPU, 2.75 s and 4.1 s with this policy; the planner's property test
// of 10,000 random units 44 s of CPU (32 of it in the kernel), 5 s with it
// (docs/results/build-time.md). The tests' main (tests/common/test_main.cpp) sets it too.
//
// The cost: a process keeps the memory it freed until it exits (its peak stays
// resident), which for a command that ends when its work ends is no loss.

namespace ragged {

// Blocks below 32 MiB (glibc's largest mmap threshold on 64-bit) come from
// the heap, and the heap keeps up to 1 GiB free at its top. No effect where
// the C library is not glibc or a sanitizer replaces its allocator. Call
// once, early in main.
void keep_freed_memory_in_the_heap();

}  // namespace ragged
