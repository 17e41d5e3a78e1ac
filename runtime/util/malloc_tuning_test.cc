#include "runtime/util/malloc_tuning.h"

#include <cstdlib>

#include "gtest/gtest.h"
#include "runtime/util/malloc_test_support.h"

#if defined(__GLIBC__)
#include <malloc.h>
#if __GLIBC_PREREQ(2, 33)
#define DISTRT_HAVE_MALLINFO2 1
#endif
#endif

namespace distrt {
namespace {

#if defined(DISTRT_MALLOC_REPLACED)

TEST(MallocTuningTest, SkippedUnderASanitizer) {
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc's malloc here";
}

#elif defined(DISTRT_HAVE_MALLINFO2)

TEST(MallocTuningTest, SettingsAreMadeWhereTheCLibraryIsGlibc) {
  // It once tested __GLIBC__ before any header defined it, and so returned
  // false everywhere without a word.
  EXPECT_TRUE(KeepLargeAllocationsInHeap());
}

TEST(MallocTuningTest, A16MiBBufferComesFromTheHeapNotItsOwnMapping) {
  ASSERT_TRUE(KeepLargeAllocationsInHeap());
  const struct mallinfo2 before = mallinfo2();
  void* buffer = std::malloc(16 << 20);
  ASSERT_NE(buffer, nullptr);
  // Touch it so that the compiler cannot drop the allocation.
  static_cast<volatile char*>(buffer)[0] = 1;
  const struct mallinfo2 during = mallinfo2();
  std::free(buffer);
  // glibc's default (128 KiB, until a mapped chunk is freed) would give the
  // buffer a mapping of its own, unmapped and faulted in afresh each time.
  EXPECT_EQ(during.hblks, before.hblks);
  EXPECT_EQ(during.hblkhd, before.hblkhd);
}

TEST(MallocTuningTest, AnotherThreadAllocatesFromTheSameArena) {
  ASSERT_TRUE(KeepLargeAllocationsInHeap());
  // Without the setting, a new thread that allocates gets an arena of its
  // own (none has ended here to leave one behind).
  distrt::testing::AllocateOnANewThread();
  EXPECT_EQ(distrt::testing::CountMallocArenas(), 1);
}

#else

TEST(MallocTuningTest, NothingToTuneHere) {
  // Not glibc (or one older than the test needs): the function must at
  // least run; where it is not glibc it says it changed nothing.
#if !defined(__GLIBC__)
  EXPECT_FALSE(KeepLargeAllocationsInHeap());
#else
  KeepLargeAllocationsInHeap();
#endif
}

#endif

}  // namespace
}  // namespace distrt
