#include "runtime/util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace distrt {
namespace {

// The VmFlags line of the mapping that holds `address`, from
// /proc/self/smaps; empty when not found.
std::string VmFlagsAt(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line + " ";
  }
  return "";
}

bool KernelHasThp() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(mode, text);
  return !text.empty() && text.find("[never]") == std::string::npos;
}

// The whole 2 MiB pages inside the buffer get the advice (VmFlags "hg"),
// whatever the buffer's alignment; the bytes before the first one do not.
TEST(HugePagesTest, AdvisesTheWholeHugePagesInside) {
  if (!KernelHasThp()) GTEST_SKIP() << "this kernel has no THP";
  const size_t length = 8 * kHugePageBytes;
  void* mapped = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  char* base = static_cast<char*>(mapped);
  const uintptr_t first_huge =
      (reinterpret_cast<uintptr_t>(base) + 4096 + kHugePageBytes - 1) &
      ~(kHugePageBytes - 1);
  EXPECT_EQ(VmFlagsAt(reinterpret_cast<void*>(first_huge)).find(" hg "),
            std::string::npos);

  AdviseHugePages(base + 4096, length - 4096);
  EXPECT_NE(VmFlagsAt(reinterpret_cast<void*>(first_huge)).find(" hg "),
            std::string::npos)
      << VmFlagsAt(reinterpret_cast<void*>(first_huge));
  if (first_huge > reinterpret_cast<uintptr_t>(base) + 4096) {
    EXPECT_EQ(VmFlagsAt(base + 4096).find(" hg "), std::string::npos);
  }
  // Written as a table would be; nothing else changes.
  for (size_t i = 0; i < length; i += 4096) base[i] = 1;
  EXPECT_EQ(base[length - 4096], 1);
  munmap(mapped, length);
}

TEST(HugePagesTest, SmallOrNullBuffersAreLeftAlone) {
  char small[64] = {};
  AdviseHugePages(small, sizeof(small));
  AdviseHugePages(nullptr, kHugePageBytes * 4);
  EXPECT_EQ(small[0], 0);
}

// Large tables start on a huge page and carry the advice; small ones are
// plain heap memory. Both are freed with std::free.
TEST(HugePagesTest, AllocateForRandomAccess) {
  void* large = AllocateForRandomAccess(3 * kHugePageBytes + 100);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % kHugePageBytes, 0u);
  if (KernelHasThp()) {
    EXPECT_NE(VmFlagsAt(large).find(" hg "), std::string::npos);
  }
  static_cast<char*>(large)[3 * kHugePageBytes + 99] = 1;
  std::free(large);
  void* small = AllocateForRandomAccess(100);
  ASSERT_NE(small, nullptr);
  std::free(small);

  std::vector<int64_t, RandomAccessAllocator<int64_t>> table(
      kHugePageBytes / sizeof(int64_t), 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(table.data()) % kHugePageBytes, 0u);
  EXPECT_EQ(table.back(), 7);
}

}  // namespace
}  // namespace distrt
