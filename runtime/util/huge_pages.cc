#include "runtime/util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace distrt {

void AdviseHugePages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const uintptr_t end = (begin + bytes) & ~(kHugePageBytes - 1);
  if (data == nullptr || end <= first) return;
  // The result is ignored on purpose: see the header.
  (void)madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

void* AllocateForRandomAccess(size_t bytes) {
  if (bytes < kHugePageBytes) return std::malloc(bytes == 0 ? 1 : bytes);
  // aligned_alloc wants a multiple of the alignment.
  const size_t rounded = (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  void* memory = std::aligned_alloc(kHugePageBytes, rounded);
  AdviseHugePages(memory, rounded);
  return memory;
}

}  // namespace distrt
