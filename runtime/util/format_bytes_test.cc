#include "runtime/util/format_bytes.h"

#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(FormatBytesTest, PicksTheUnit) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{12} << 20), "12.0 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 40), "3.0 TiB");
}

}  // namespace
}  // namespace distrt
