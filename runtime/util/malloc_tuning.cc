#include "runtime/util/malloc_tuning.h"

// Any C library header defines __GLIBC__ (through <features.h>) where the C
// library is glibc; without one, the check below would see it undefined
// everywhere and the settings would silently never be made.
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace distrt {

bool KeepLargeAllocationsInHeap() {
#if defined(__GLIBC__)
  // glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit).
  constexpr int kMmapThreshold = 32 << 20;
  constexpr int kTrimThreshold = 256 << 20;
  // One arena for every thread: see the header.
  constexpr int kArenas = 1;
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 &&
         mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1 &&
         mallopt(M_ARENA_MAX, kArenas) == 1;
#else
  return false;
#endif
}

}  // namespace distrt
