#include "runtime/input/quoted_token.h"

#include <string>

#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(QuotedTokenTest, ShortPrintableTokensAreQuotedAsTheyAre) {
  EXPECT_EQ(QuotedToken("x"), "\"x\"");
  EXPECT_EQ(QuotedToken(""), "\"\"");
}

TEST(QuotedTokenTest, ControlBytesAndQuotesAreEscaped) {
  // CHexEscape: a byte after a \x escape is escaped too, so it cannot be
  // read as more hex digits.
  EXPECT_EQ(QuotedToken(std::string("a\0b", 3)), "\"a\\x00\\x62\"");
  EXPECT_EQ(QuotedToken("say \"1\"\n"), "\"say \\\"1\\\"\\n\"");
}

TEST(QuotedTokenTest, LongTokensAreCutAndTheirSizeSaid) {
  const std::string token(1 << 20, 'z');
  const std::string quoted = QuotedToken(token);
  EXPECT_EQ(quoted, "\"" + std::string(kMaxQuotedTokenBytes, 'z') +
                        "...\" (1048576 bytes)");
  EXPECT_EQ(QuotedToken(std::string(kMaxQuotedTokenBytes, 'y')),
            "\"" + std::string(kMaxQuotedTokenBytes, 'y') + "\"");
}

}  // namespace
}  // namespace distrt
