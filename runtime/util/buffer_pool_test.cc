#include "runtime/util/buffer_pool.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(BufferPoolTest, ReusesAGivenBackBufferOfTheSameSizeClass) {
  BufferPool pool;
  char* first = nullptr;
  {
    BufferPool::Buffer buffer = pool.Get(3 << 20);
    EXPECT_EQ(buffer.size(), size_t{3} << 20);
    std::memset(buffer.data(), 1, buffer.size());
    first = buffer.data();
  }
  EXPECT_EQ(pool.cached_bytes(), int64_t{4} << 20);  // its size class
  BufferPool::Buffer again = pool.Get(4 << 20);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(pool.cached_bytes(), 0);
  // Another class does not take it.
  BufferPool::Buffer other = pool.Get(5 << 20);
  EXPECT_NE(other.data(), first);
}

TEST(BufferPoolTest, BuffersAreAlignedForAnyElementType) {
  BufferPool pool;
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{1} << 20}) {
    BufferPool::Buffer buffer = pool.Get(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u) << bytes;
  }
}

TEST(BufferPoolTest, KeepsNoMoreThanItsCacheLimit) {
  BufferPool::Options options;
  options.max_cached_bytes = 8 << 10;
  BufferPool pool(options);
  {
    BufferPool::Buffer a = pool.Get(4 << 10);
    BufferPool::Buffer b = pool.Get(4 << 10);
    BufferPool::Buffer c = pool.Get(4 << 10);
  }
  EXPECT_EQ(pool.cached_bytes(), 8 << 10);
  { BufferPool::Buffer big = pool.Get(1 << 20); }
  EXPECT_EQ(pool.cached_bytes(), 8 << 10);
}

TEST(BufferPoolTest, MovedBufferIsGivenBackOnce) {
  BufferPool pool;
  {
    BufferPool::Buffer a = pool.Get(10);
    BufferPool::Buffer b = std::move(a);
    EXPECT_EQ(a.data(), nullptr);
    BufferPool::Buffer c;
    c = std::move(b);
    EXPECT_EQ(c.size(), 10u);
  }
  EXPECT_EQ(pool.cached_bytes(), 4 << 10);
}

TEST(BufferPoolTest, ABufferMayOutliveItsPool) {
  BufferPool::Buffer survivor;
  {
    BufferPool pool;
    survivor = pool.Get(1 << 16);
    std::memset(survivor.data(), 7, survivor.size());
  }
  EXPECT_EQ(survivor.data()[0], 7);
  // Freed, not cached, when destroyed after its pool (ASan would see a leak
  // or a use after free otherwise).
}

}  // namespace
}  // namespace distrt
