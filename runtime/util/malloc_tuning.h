#ifndef DISTRT_RUNTIME_UTIL_MALLOC_TUNING_H_
#define DISTRT_RUNTIME_UTIL_MALLOC_TUNING_H_

// Process-wide allocator settings for the binaries that move large messages
// (ps_server, worker, bench). Call once at the start of main(), before any
// thread has allocated: an arena a thread made before the call is handed to
// later threads when that thread ends, whatever the limit below says.
//
// Why: glibc serves every allocation of 128 KiB or more with its own mmap
// and unmaps it on free, so each large buffer gRPC allocates to receive a
// message, and each large vector, page-faults on every first touch of every
// page: a profile of ps_server under load shows the kernel faulting pages in
// while copying received bytes. On a VM that hands freed memory back to its
// host a first touch is dearer still (on this project's VM, 2026-11-27:
// 0.24 GB/s against 20 GB/s for touched pages; with these settings not made,
// dense pushes and pulls ran at 0.2-0.3 GB/s, the bare gRPC baseline too,
// against 1.2-2.3 with them). So:
// - the mmap threshold goes to glibc's maximum (32 MiB on 64-bit) and the
//   trim threshold to 256 MiB, which keeps such buffers in the heap, where
//   freed memory is reused without faults;
// - one arena for all threads, instead of up to 8 per core: gRPC receives
//   on one thread and frees on another, and each arena kept its own high
//   water mark of message buffers, so a ps task's peak grew by what every
//   arena had once held (ps_memory, 256 MiB SGD variable: 1.51 of the raw
//   bytes with one arena per thread, 1.19 with one). The cost: every thread
//   takes the arena's lock for allocations that glibc's small per-thread
//   cache (chunks up to ~1 KiB, a few of each size) cannot serve, including
//   when one thread frees what another allocated. On 2 cores the dense
//   family ran as fast or faster (bench/ps_memory_bench.cc,
//   bench/dense_transport_bench.cc) and the logreg job no slower; a worker
//   whose many threads allocate large tensors at once (LibTorch's intra-op
//   threads, replicas, Gloo) on a many-core host has not been measured.
// Idle memory may stay higher, as freed chunks are kept for reuse.
//
// A parameter the environment already sets (glibc's MALLOC_ARENA_MAX,
// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, or the same in
// GLIBC_TUNABLES) is left as the user chose, e.g. MALLOC_ARENA_MAX=8 for a
// worker whose threads contend for the one arena.
//
// Returns false (and may have made some of the settings) where the C
// library has no mallopt or refuses a setting (AddressSanitizer's mallopt
// refuses all; ThreadSanitizer's allocator lets glibc's mallopt through
// but does not use glibc's heap, so the settings change nothing there).
namespace distrt {

bool KeepLargeAllocationsInHeap();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_MALLOC_TUNING_H_
