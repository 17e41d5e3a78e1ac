#include "runtime/util/malloc_tuning.h"

// Any C library header defines __GLIBC__ (through <features.h>) where the C
// library is glibc; without one, the check below would see it undefined
// everywhere and the settings would silently never be made.
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace distrt {
namespace {

#if defined(__GLIBC__)
// Whether the environment already sets this parameter, as glibc's own
// MALLOC_*_ variable or in GLIBC_TUNABLES (glibc applied either before
// main): then the user's choice stands.
bool SetInEnvironment(const char* variable, const char* tunable) {
  if (std::getenv(variable) != nullptr) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && std::strstr(tunables, tunable) != nullptr;
}

// mallopt(parameter, value) unless the environment sets the parameter.
bool SetUnlessChosen(int parameter, int value, const char* variable,
                     const char* tunable) {
  return SetInEnvironment(variable, tunable) || mallopt(parameter, value) == 1;
}
#endif

}  // namespace

bool KeepLargeAllocationsInHeap() {
#if defined(__GLIBC__)
  // glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit).
  constexpr int kMmapThreshold = 32 << 20;
  constexpr int kTrimThreshold = 256 << 20;
  // One arena for every thread: see the header.
  constexpr int kArenas = 1;
  return SetUnlessChosen(M_MMAP_THRESHOLD, kMmapThreshold,
                         "MALLOC_MMAP_THRESHOLD_",
                         "glibc.malloc.mmap_threshold") &&
         SetUnlessChosen(M_TRIM_THRESHOLD, kTrimThreshold,
                         "MALLOC_TRIM_THRESHOLD_",
                         "glibc.malloc.trim_threshold") &&
         SetUnlessChosen(M_ARENA_MAX, kArenas, "MALLOC_ARENA_MAX",
                         "glibc.malloc.arena_max");
#else
  return false;
#endif
}

}  // namespace distrt
