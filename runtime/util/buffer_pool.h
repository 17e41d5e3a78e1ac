#ifndef DISTRT_RUNTIME_UTIL_BUFFER_POOL_H_
#define DISTRT_RUNTIME_UTIL_BUFFER_POOL_H_

// BufferPool: reusable byte buffers for message payloads.
//
// Why: glibc serves every allocation of 128 KiB or more with a fresh mmap,
// so a buffer allocated per message page-faults on every first touch of
// every page (about a quarter of a 16 MiB copy's time). Buffers taken from
// here and given back are reused instead: their pages stay mapped.
//
// Buffers come in size classes (powers of two, at least 4 KiB) and are
// 64-byte aligned, so any element type can be read in place. A buffer given
// back is kept while the pool caches less than Options::max_cached_bytes
// and freed otherwise. Contents are not initialised.
//
// Thread-safe. A Buffer may outlive its pool (it is then freed, not kept),
// so a transport can hand one to gRPC without ordering its destruction.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/types/span.h"

namespace distrt {

class BufferPool {
 public:
  struct Options {
    // Bytes of idle buffers kept for reuse; 0 keeps none.
    int64_t max_cached_bytes = int64_t{128} << 20;
  };

  // Move-only; gives its memory back to the pool when destroyed.
  class Buffer {
   public:
    Buffer() = default;
    ~Buffer();
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    char* data() const { return data_; }
    // The bytes asked for (the allocation may be larger).
    size_t size() const { return size_; }
    absl::Span<char> span() const { return {data_, size_}; }

   private:
    friend class BufferPool;
    struct Shared;
    void Release();

    std::shared_ptr<Shared> pool_;
    char* data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
  };

  explicit BufferPool(Options options);
  BufferPool() : BufferPool(Options()) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` bytes (size() == bytes), reused when one of
  // its size class is idle.
  Buffer Get(size_t bytes);

  // Bytes of idle buffers held now.
  int64_t cached_bytes() const;

 private:
  std::shared_ptr<Buffer::Shared> shared_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_BUFFER_POOL_H_
