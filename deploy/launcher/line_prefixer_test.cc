#include "deploy/launcher/line_prefixer.h"

#include <string>

#include "gtest/gtest.h"

namespace distrt::launcher {
namespace {

TEST(LinePrefixerTest, PrefixesEachCompleteLine) {
  LinePrefixer prefixer("[w:1] ");
  EXPECT_EQ(prefixer.Append("a\nbb\n"), "[w:1] a\n[w:1] bb\n");
  EXPECT_EQ(prefixer.Flush(), "");
}

TEST(LinePrefixerTest, KeepsAPartialLineUntilItEnds) {
  LinePrefixer prefixer("[p] ");
  EXPECT_EQ(prefixer.Append("hel"), "");
  EXPECT_EQ(prefixer.Append("lo"), "");
  EXPECT_EQ(prefixer.Append(" world\nne"), "[p] hello world\n");
  EXPECT_EQ(prefixer.Append("xt\n"), "[p] next\n");
}

TEST(LinePrefixerTest, EmptyLinesArePrefixedToo) {
  LinePrefixer prefixer("> ");
  EXPECT_EQ(prefixer.Append("\n\nx\n"), "> \n> \n> x\n");
}

TEST(LinePrefixerTest, FlushEmitsTheLastPartialLineOnce) {
  LinePrefixer prefixer("[c:0] ");
  EXPECT_EQ(prefixer.Append("done\nno newline"), "[c:0] done\n");
  EXPECT_EQ(prefixer.Flush(), "[c:0] no newline\n");
  EXPECT_EQ(prefixer.Flush(), "");
}

TEST(LinePrefixerTest, ByteByByteGivesTheSameLines) {
  const std::string text = "one\ntwo\n\nthree\n";
  LinePrefixer whole("# ");
  LinePrefixer bytes("# ");
  std::string from_bytes;
  for (char c : text) from_bytes += bytes.Append(std::string(1, c));
  EXPECT_EQ(from_bytes, whole.Append(text));
  EXPECT_EQ(from_bytes, "# one\n# two\n# \n# three\n");
}

TEST(LinePrefixerTest, LongLinesAreCutAtTheLimit) {
  LinePrefixer prefixer("| ", /*max_line_bytes=*/4);
  EXPECT_EQ(prefixer.Append("abcdefghij"), "| abcd\n| efgh\n");
  EXPECT_EQ(prefixer.Append("\n"), "| ij\n");
  // A line of exactly the limit is one line, not a line and an empty one.
  EXPECT_EQ(prefixer.Append("wxyz\n"), "| wxyz\n");
  // Also when its newline comes in the next piece.
  EXPECT_EQ(prefixer.Append("1234"), "| 1234\n");
  EXPECT_EQ(prefixer.Append("\n5\n"), "| 5\n");
  EXPECT_EQ(prefixer.Flush(), "");
}

}  // namespace
}  // namespace distrt::launcher
