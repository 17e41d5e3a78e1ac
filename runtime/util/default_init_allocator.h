#ifndef DISTRT_RUNTIME_UTIL_DEFAULT_INIT_ALLOCATOR_H_
#define DISTRT_RUNTIME_UTIL_DEFAULT_INIT_ALLOCATOR_H_

// DefaultInitAllocator: an allocator whose value-initialising construct()
// default-initialises instead, so that resize() of a std::vector of floats
// leaves the new elements unset rather than writing zeros over them. For
// buffers that are written whole right after they grow (rows gathered for a
// request, rows received before they are scattered), where the zeros were a
// pass over megabytes that nothing read.

#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace distrt {

template <typename T>
class DefaultInitAllocator : public std::allocator<T> {
 public:
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };

  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

  template <typename U>
  void construct(U* at) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(at)) U;
  }
  template <typename U, typename... Args>
  void construct(U* at, Args&&... args) {
    ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
  }
};

// A vector whose resize() does not zero what it adds.
template <typename T>
using UninitializedVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_DEFAULT_INIT_ALLOCATOR_H_
