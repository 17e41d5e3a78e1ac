#include "runtime/collective/test_group_prefix.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace distrt {

std::string UniqueGroupPrefix() {
  static std::atomic<int> next{0};
  const testing::TestInfo* test =
      testing::UnitTest::GetInstance()->current_test_info();
  const int n = next.fetch_add(1);
  if (test == nullptr) return absl::StrCat("test#", n);
  return absl::StrCat(test->test_suite_name(), ".", test->name(), "#", n);
}

}  // namespace distrt
