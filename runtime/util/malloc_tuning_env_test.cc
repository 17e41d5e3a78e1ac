// KeepLargeAllocationsInHeap leaves a parameter the environment sets to the
// user. A test binary of its own: the settings are process-wide and last,
// so malloc_tuning_test's call would hide what this one checks.

#include <cstdlib>

#include "gtest/gtest.h"
#include "runtime/util/malloc_test_support.h"
#include "runtime/util/malloc_tuning.h"

namespace distrt {
namespace {

#if defined(__GLIBC__) && !defined(DISTRT_MALLOC_REPLACED)

TEST(MallocTuningEnvTest, ArenaLimitFromTheEnvironmentIsLeftAlone) {
  // glibc read its environment before main, so this variable only tells
  // KeepLargeAllocationsInHeap that the user chose: glibc's default limit
  // (8 arenas per core) stays, and a new thread gets an arena of its own.
  ASSERT_EQ(setenv("MALLOC_ARENA_MAX", "8", /*overwrite=*/1), 0);
  EXPECT_TRUE(KeepLargeAllocationsInHeap());
  distrt::testing::AllocateOnANewThread();
  EXPECT_EQ(distrt::testing::CountMallocArenas(), 2);
}

#else

TEST(MallocTuningEnvTest, SkippedWithoutGlibcsMalloc) {
  GTEST_SKIP() << "not glibc's malloc here";
}

#endif

}  // namespace
}  // namespace distrt
