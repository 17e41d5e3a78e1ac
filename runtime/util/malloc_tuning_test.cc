#include "runtime/util/malloc_tuning.h"

#include <cstdlib>

#include "gtest/gtest.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// Sanitizers replace malloc, and their mallopt changes nothing.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DISTRT_MALLOC_REPLACED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DISTRT_MALLOC_REPLACED 1
#endif
#endif

namespace distrt {
namespace {

#if defined(__GLIBC__) && !defined(DISTRT_MALLOC_REPLACED)

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

#else

TEST(MallocTuningTest, NothingToTuneHere) {
  // Not glibc's own malloc: the function says it changed nothing.
  EXPECT_FALSE(KeepLargeAllocationsInHeap());
}

#endif

}  // namespace
}  // namespace distrt
