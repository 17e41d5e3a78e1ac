#include "runtime/input/line_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/file_privileges.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// All lines of `path`, each checked to come with the right line number.
std::vector<std::string> ReadAll(const std::string& path) {
  absl::StatusOr<std::unique_ptr<LineReader>> reader = LineReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  EXPECT_EQ((*reader)->line_number(), 0);
  std::vector<std::string> lines;
  std::string line;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->ReadLine(&line);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    lines.push_back(line);
    EXPECT_EQ((*reader)->line_number(), static_cast<int64_t>(lines.size()));
  }
  // The end stays the end.
  absl::StatusOr<bool> more = (*reader)->ReadLine(&line);
  EXPECT_TRUE(more.ok() && !*more);
  return lines;
}

TEST(LineReaderTest, SplitsLinesAndDropsTerminators) {
  TestDir dir;
  EXPECT_THAT(ReadAll(dir.WriteFile("lf", "a b\n\nc\n")),
              ElementsAre("a b", "", "c"));
  EXPECT_THAT(ReadAll(dir.WriteFile("crlf", "a b\r\n\r\nc\r\n")),
              ElementsAre("a b", "", "c"));
  EXPECT_THAT(ReadAll(dir.WriteFile("no_final_newline", "a\nlast")),
              ElementsAre("a", "last"));
  EXPECT_THAT(ReadAll(dir.WriteFile("empty", "")), IsEmpty());
  EXPECT_THAT(ReadAll(dir.WriteFile("one_newline", "\n")), ElementsAre(""));
}

TEST(LineReaderTest, DropsAByteOrderMarkOnlyAtTheStart) {
  TestDir dir;
  EXPECT_THAT(ReadAll(dir.WriteFile("bom", "\xEF\xBB\xBFx,y\n\xEF\xBB\xBFz\n")),
              ElementsAre("x,y", "\xEF\xBB\xBFz"));
}

TEST(LineReaderTest, ReadsLinesLongerThanItsBuffer) {
  TestDir dir;
  const std::string long_line(200 * 1024 + 3, 'x');
  EXPECT_THAT(
      ReadAll(dir.WriteFile("long", "a\n" + long_line + "\r\nb\n" + long_line)),
      ElementsAre("a", long_line, "b", long_line));
}

TEST(LineReaderTest, LocationNamesPathAndLine) {
  TestDir dir;
  const std::string path = dir.WriteFile("f", "a\nb\n");
  absl::StatusOr<std::unique_ptr<LineReader>> reader = LineReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string line;
  ASSERT_TRUE(*(*reader)->ReadLine(&line));
  ASSERT_TRUE(*(*reader)->ReadLine(&line));
  EXPECT_EQ(line, "b");
  EXPECT_EQ((*reader)->location(), path + ":2");
  EXPECT_EQ((*reader)->path(), path);
}

TEST(LineReaderTest, MissingFileIsNotFound) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "missing.svm");
  absl::StatusOr<std::unique_ptr<LineReader>> reader = LineReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reader.status().message(),
            "cannot open " + path + ": No such file or directory");
}

TEST(LineReaderTest, UnreadableFileIsPermissionDenied) {
  TestDir dir;
  const std::string path = dir.WriteFile("secret", "1 1:1\n");
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  // In a child held to file modes (root, as in CI, is not otherwise).
  EXPECT_EXIT(
      {
        const absl::Status dropped = DropFilePrivileges();
        absl::StatusOr<std::unique_ptr<LineReader>> reader =
            LineReader::Open(path);
        const bool denied =
            dropped.ok() &&
            reader.status().code() == absl::StatusCode::kPermissionDenied &&
            reader.status().message() ==
                "cannot open " + path + ": Permission denied";
        if (!denied) std::cerr << dropped << " / " << reader.status() << "\n";
        std::exit(denied ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LineReaderTest, DirectoryFailsAtTheFirstRead) {
  TestDir dir;
  absl::StatusOr<std::unique_ptr<LineReader>> reader =
      LineReader::Open(dir.path());
  ASSERT_TRUE(reader.ok()) << reader.status();  // open(2) allows it
  std::string line;
  absl::StatusOr<bool> more = (*reader)->ReadLine(&line);
  ASSERT_FALSE(more.ok());
  EXPECT_THAT(more.status().message(),
              HasSubstr("cannot read " + dir.path() + " at line 1: "));
  EXPECT_THAT(more.status().message(), HasSubstr("Is a directory"));
}

}  // namespace
}  // namespace distrt
