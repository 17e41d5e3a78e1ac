#ifndef DISTRT_RUNTIME_UTIL_HUGE_PAGES_H_
#define DISTRT_RUNTIME_UTIL_HUGE_PAGES_H_

// AdviseHugePages: asks the kernel to back a large buffer that is about to be
// written for the first time with transparent huge pages (2 MiB) where it
// can. A ps task reads and updates rows of its tables at random: with 4 KiB
// pages nearly every row is also a TLB miss, whose page walk in a virtual
// machine costs about as much as the row itself. Reading 10k random rows of
// a 1M x 64 float table took 20% less time with huge pages on this
// project's VM (Debian's default THP mode is "madvise": nothing is huge
// unless asked for).
//
// AdviseHugePages advises only the whole 2 MiB pages inside a buffer; pages
// already touched are left to the kernel's khugepaged. Advice only: where the
// kernel has no THP, or refuses, nothing changes and nothing fails.

#include <cstddef>
#include <cstdlib>
#include <new>

namespace distrt {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

void AdviseHugePages(void* data, size_t bytes);

// `bytes` of uninitialised memory, to be freed with std::free: from
// kHugePageBytes up, aligned to a huge page and advised, so that all of it
// can be on huge pages (a heap buffer of 4 MiB holds only one whole huge
// page when it is not aligned); below, plain malloc. nullptr when out of
// memory.
void* AllocateForRandomAccess(size_t bytes);

// The same as a standard allocator, for containers that grow large and are
// read at random (a hash table's index).
template <typename T>
struct RandomAccessAllocator {
  using value_type = T;
  RandomAccessAllocator() = default;
  template <typename U>
  RandomAccessAllocator(const RandomAccessAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    void* memory = AllocateForRandomAccess(n * sizeof(T));
    if (memory == nullptr) throw std::bad_alloc();
    return static_cast<T*>(memory);
  }
  void deallocate(T* p, size_t) noexcept { std::free(p); }

  template <typename U>
  bool operator==(const RandomAccessAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const RandomAccessAllocator<U>&) const noexcept {
    return false;
  }
};

// Frees what AllocateForRandomAccess gave, for std::unique_ptr.
struct FreeRandomAccess {
  void operator()(void* p) const noexcept { std::free(p); }
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_HUGE_PAGES_H_
