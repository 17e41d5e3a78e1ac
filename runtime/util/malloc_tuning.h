#ifndef DISTRT_RUNTIME_UTIL_MALLOC_TUNING_H_
#define DISTRT_RUNTIME_UTIL_MALLOC_TUNING_H_

// Process-wide allocator settings for the binaries that move large messages
// (ps_server, worker, bench). Call once at the start of main().
//
// Why: glibc serves every allocation of 128 KiB or more with its own mmap
// and unmaps it on free, so each large buffer gRPC allocates to receive a
// message, and each large vector, page-faults on every first touch of every
// page: a profile of ps_server under load shows the kernel faulting pages in
// while copying received bytes. Raising the mmap threshold to glibc's
// maximum (32 MiB on 64-bit) and the trim threshold keeps such buffers in
// the heap, where freed memory is reused without faults. Peak memory is
// unchanged (the same buffers are live at the peak); idle memory may stay
// higher, as freed chunks are kept for reuse.
//
// Returns false (and changes nothing more) where the C library has no
// mallopt or refuses a setting.
namespace distrt {

bool KeepLargeAllocationsInHeap();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_MALLOC_TUNING_H_
