#include "runtime/util/malloc_tuning.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "gtest/gtest.h"

#if defined(__GLIBC__)
#include <malloc.h>
#if __GLIBC_PREREQ(2, 33)
#define DISTRT_HAVE_MALLINFO2 1
#endif
#endif

// Sanitizers bring their own malloc: AddressSanitizer's mallopt refuses
// every setting, ThreadSanitizer's lets glibc's through but never uses
// glibc's heap. Neither can show what the settings do.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DISTRT_MALLOC_REPLACED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DISTRT_MALLOC_REPLACED 1
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

// Counts the arenas in malloc_info's report, one <heap nr="..."> each.
int CountArenas() {
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return -1;
  malloc_info(0, stream);
  std::fclose(stream);
  int arenas = 0;
  const std::string report(text, size);
  std::free(text);
  for (size_t at = report.find("<heap nr="); at != std::string::npos;
       at = report.find("<heap nr=", at + 1)) {
    ++arenas;
  }
  return arenas;
}

TEST(MallocTuningTest, AnotherThreadAllocatesFromTheSameArena) {
  ASSERT_TRUE(KeepLargeAllocationsInHeap());
  // Without the setting, a new thread that allocates gets an arena of its
  // own (none has ended here to leave one behind).
  std::thread([] {
    void* buffer = std::malloc(1 << 20);
    static_cast<volatile char*>(buffer)[0] = 1;
    std::free(buffer);
  }).join();
  EXPECT_EQ(CountArenas(), 1);
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
