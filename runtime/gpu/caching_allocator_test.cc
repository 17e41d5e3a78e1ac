#include "runtime/gpu/caching_allocator.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/tensor/tensor.h"

namespace distrt::gpu {
namespace {

// What a FakeRawMemory did; owned by the test, so it outlives the
// allocator that owns the raw memory.
struct RawLedger {
  size_t used = 0;
  int allocations = 0;
  int frees = 0;
};

// Host memory with a capacity, recording what is outstanding.
class FakeRawMemory : public RawMemory {
 public:
  FakeRawMemory(size_t capacity, RawLedger* ledger)
      : capacity_(capacity), ledger_(ledger) {}
  void* Allocate(size_t bytes) override {
    if (ledger_->used + bytes > capacity_) return nullptr;
    void* ptr = std::malloc(bytes);
    ledger_->used += bytes;
    sizes_[ptr] = bytes;
    ++ledger_->allocations;
    return ptr;
  }
  void Free(void* ptr) override {
    ledger_->used -= sizes_.at(ptr);
    sizes_.erase(ptr);
    std::free(ptr);
    ++ledger_->frees;
  }

 private:
  const size_t capacity_;
  RawLedger* const ledger_;
  std::map<void*, size_t> sizes_;
};

struct Fixture {
  explicit Fixture(size_t capacity = size_t{1} << 30)
      : allocator(std::make_unique<CachingAllocator>(
            "gpu:0", std::make_unique<FakeRawMemory>(capacity, &raw))) {}
  RawLedger raw;
  std::unique_ptr<CachingAllocator> allocator;
};

TEST(CachingAllocatorTest, RoundsSmallTo512AndLargeToMiB) {
  EXPECT_EQ(CachingAllocator::RoundedSize(1), 512u);
  EXPECT_EQ(CachingAllocator::RoundedSize(512), 512u);
  EXPECT_EQ(CachingAllocator::RoundedSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::RoundedSize((1 << 20) + 1), 2u << 20);
}

// The point of it: a step's allocations repeat, and from the second step on
// nothing reaches the raw memory.
TEST(CachingAllocatorTest, RepeatedStepsReuseBlocks) {
  Fixture f;
  const std::vector<size_t> step = {4000, 100, 3 << 20, 4000, 77};
  for (int s = 0; s < 5; ++s) {
    std::vector<void*> ptrs;
    for (size_t bytes : step) {
      void* ptr = f.allocator->Allocate(bytes);
      ASSERT_NE(ptr, nullptr);
      ptrs.push_back(ptr);
    }
    EXPECT_EQ(std::set<void*>(ptrs.begin(), ptrs.end()).size(), ptrs.size());
    for (size_t i = 0; i < ptrs.size(); ++i) {
      f.allocator->Deallocate(ptrs[i], step[i]);
    }
  }
  EXPECT_EQ(f.raw.allocations, static_cast<int>(step.size()));
  EXPECT_EQ(f.raw.frees, 0);
  const CachingAllocatorStats stats = f.allocator->stats();
  EXPECT_EQ(stats.cache_hits, 4 * static_cast<int64_t>(step.size()));
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.peak_bytes_in_use, 4000 + 100 + (3 << 20) + 4000 + 77);
  EXPECT_EQ(stats.bytes_cached, stats.bytes_reserved);
}

TEST(CachingAllocatorTest, DoesNotHandOutMuchLargerBlocks) {
  Fixture f;
  void* big = f.allocator->Allocate(8 << 20);
  f.allocator->Deallocate(big, 8 << 20);
  // 1 MiB would waste 7/8 of the cached block: a new one is made.
  void* small = f.allocator->Allocate(1 << 20);
  EXPECT_NE(small, big);
  EXPECT_EQ(f.raw.allocations, 2);
  // Within a quarter more, the cached block is used.
  void* near = f.allocator->Allocate(7 << 20);
  EXPECT_EQ(near, big);
  f.allocator->Deallocate(small, 1 << 20);
  f.allocator->Deallocate(near, 7 << 20);
}

TEST(CachingAllocatorTest, ReleasesTheCacheWhenRawMemoryRunsOut) {
  Fixture f(/*capacity=*/4 << 20);
  void* a = f.allocator->Allocate(3 << 20);
  ASSERT_NE(a, nullptr);
  f.allocator->Deallocate(a, 3 << 20);
  // 3 MiB is cached; 2 MiB does not fit beside it and cannot reuse it.
  void* b = f.allocator->Allocate(2 << 20);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(f.raw.frees, 1);
  EXPECT_EQ(f.allocator->stats().bytes_cached, 0);
  f.allocator->Deallocate(b, 2 << 20);
}

TEST(CachingAllocatorTest, OutOfMemoryIsNullAndAStatusForTensors) {
  Fixture f(/*capacity=*/1 << 20);
  EXPECT_EQ(f.allocator->Allocate(2 << 20), nullptr);
  absl::StatusOr<Tensor> tensor =
      Tensor::Create(DType::kFloat32, {1 << 20}, f.allocator.get());
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(tensor.status().message().find("gpu:0"), std::string::npos)
      << tensor.status();
}

TEST(CachingAllocatorTest, ReleaseCachedAndDestructionReturnEverything) {
  Fixture f;
  void* a = f.allocator->Allocate(1000);
  void* b = f.allocator->Allocate(5 << 20);
  f.allocator->Deallocate(a, 1000);
  f.allocator->ReleaseCached();
  EXPECT_EQ(f.raw.frees, 1);
  EXPECT_EQ(f.raw.used, 5u << 20);
  f.allocator->Deallocate(b, 5 << 20);
  f.allocator.reset();
  EXPECT_EQ(f.raw.frees, 2);
  EXPECT_EQ(f.raw.used, 0u);
}

TEST(CachingAllocatorTest, IgnoresPointersItDidNotAllocate) {
  Fixture f;
  int unrelated = 0;
  f.allocator->Deallocate(&unrelated, sizeof(unrelated));
  EXPECT_EQ(f.allocator->stats().bytes_cached, 0);
  void* a = f.allocator->Allocate(64);
  EXPECT_NE(a, &unrelated);
  f.allocator->Deallocate(a, 64);
}

}  // namespace
}  // namespace distrt::gpu
