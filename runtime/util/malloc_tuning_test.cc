#include "runtime/util/malloc_tuning.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

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
  // Without the setting, a second thread that allocates while the first
  // holds memory gets an arena of its own.
  void* held = std::malloc(1 << 20);
  std::thread([] {
    void* buffer = std::malloc(1 << 20);
    static_cast<volatile char*>(buffer)[0] = 1;
    std::free(buffer);
  }).join();
  std::free(held);
  EXPECT_EQ(CountArenas(), 1);
}

#else

TEST(MallocTuningTest, NothingToTuneHere) {
  // Not glibc's own malloc: the function says it changed nothing.
  EXPECT_FALSE(KeepLargeAllocationsInHeap());
}

#endif

}  // namespace
}  // namespace distrt
