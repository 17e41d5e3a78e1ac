#include "runtime/input/line_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
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

// Each line's start offset and text, read from `start_offset`.
std::vector<std::pair<int64_t, std::string>> ReadWithOffsets(
    const std::string& path, int64_t start_offset, int64_t start_line) {
  absl::StatusOr<std::unique_ptr<LineReader>> reader =
      LineReader::Open(path, start_offset, start_line);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  std::vector<std::pair<int64_t, std::string>> lines;
  std::string line;
  while (true) {
    const int64_t offset = (*reader)->next_line_offset();
    absl::StatusOr<bool> more = (*reader)->ReadLine(&line);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    lines.emplace_back(offset, line);
    EXPECT_EQ((*reader)->line_number(),
              start_line + static_cast<int64_t>(lines.size()) - 1);
  }
  return lines;
}

TEST(LineReaderTest, ReportsEachLinesOffsetAndResumesThere) {
  TestDir dir;
  const std::string contents =
      "\xEF\xBB\xBF"
      "ab\r\n\ncd\nlast";
  const std::string path = dir.WriteFile("f", contents);
  using Line = std::pair<int64_t, std::string>;
  const std::vector<Line> all = ReadWithOffsets(path, 0, 1);
  EXPECT_THAT(all, ElementsAre(Line{0, "ab"}, Line{7, ""}, Line{8, "cd"},
                               Line{11, "last"}));
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_EQ(ReadWithOffsets(path, all[i].first, static_cast<int64_t>(i) + 1),
              std::vector<Line>(all.begin() + i, all.end()));
  }
  // At the end: nothing left, and the offset is the file's size.
  absl::StatusOr<std::unique_ptr<LineReader>> reader =
      LineReader::Open(path, static_cast<int64_t>(contents.size()), 5);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->next_line_offset(),
            static_cast<int64_t>(contents.size()));
  std::string line;
  EXPECT_FALSE(*(*reader)->ReadLine(&line));
  EXPECT_EQ((*reader)->line_number(), 4);
}

TEST(LineReaderTest, OffsetsStayRightAcrossBufferRefills) {
  TestDir dir;
  std::string contents;
  std::vector<int64_t> starts;
  for (int i = 0; i < 20000; ++i) {
    starts.push_back(static_cast<int64_t>(contents.size()));
    contents += std::string(i % 37, 'x') + (i % 3 == 0 ? "\r\n" : "\n");
  }
  const std::string path = dir.WriteFile("big", contents);
  const auto all = ReadWithOffsets(path, 0, 1);
  ASSERT_EQ(all.size(), starts.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(all[i].first, starts[i]) << "line " << i + 1;
  }
  const auto tail = ReadWithOffsets(path, starts[12345], 12346);
  ASSERT_EQ(tail.size(), all.size() - 12345);
  EXPECT_EQ(tail.front(), all[12345]);
  EXPECT_EQ(tail.back(), all.back());
}

TEST(LineReaderTest, OpenAtAnOffsetChecksIt) {
  TestDir dir;
  const std::string path = dir.WriteFile("f", "ab\ncd\n");
  absl::StatusOr<std::unique_ptr<LineReader>> reader =
      LineReader::Open(path, 4, 2);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reader.status().message(),
            "cannot open " + path +
                " at byte 4: not a line's start (has the file changed?)");
  reader = LineReader::Open(path, 9, 3);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(reader.status().message(), "cannot open " + path +
                                           " at byte 9: the file has only "
                                           "6 bytes");
  for (auto [offset, line] : std::vector<std::pair<int64_t, int64_t>>{
           {-1, 1}, {0, 2}, {3, 1}, {3, 0}}) {
    EXPECT_EQ(LineReader::Open(path, offset, line).status().code(),
              absl::StatusCode::kInvalidArgument)
        << offset << " " << line;
  }
  EXPECT_EQ(
      LineReader::Open(JoinPath(dir.path(), "missing"), 3, 2).status().code(),
      absl::StatusCode::kNotFound);
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
