#include "runtime/util/file_system.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FileSystemTest, JoinPath) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
}

TEST(FileSystemTest, WriteFileAtomicallyReplacesAndLeavesNoTemporary) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "f");
  ASSERT_TRUE(WriteFileAtomically(path, {"old"}).ok());
  ASSERT_TRUE(WriteFileAtomically(path, {"new ", "", "contents"}).ok());
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(*contents, "new contents");
  EXPECT_THAT(*ListDirectory(dir.path()), ElementsAre("f"));
}

TEST(FileSystemTest, ErrorsNameThePath) {
  TestDir dir;
  const std::string missing = JoinPath(dir.path(), "no/such/f");
  absl::Status write = WriteFileAtomically(missing, {"x"});
  EXPECT_EQ(write.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(write.message(), HasSubstr("cannot write " + missing));
  EXPECT_THAT(write.message(), HasSubstr("does not exist"));
  absl::StatusOr<std::string> read = ReadFileToString(missing);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr(missing));
  EXPECT_EQ(ListDirectory(missing).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(CheckIsDirectory(missing).message(),
            "directory " + missing + " does not exist");
  EXPECT_FALSE(*PathExists(missing));
}

TEST(FileSystemTest, CreateListAndRemoveTrees) {
  TestDir dir;
  const std::string deep = JoinPath(dir.path(), "a/b/c");
  ASSERT_TRUE(CreateDirectories(deep).ok());
  ASSERT_TRUE(CreateDirectories(deep).ok());  // already there: fine
  EXPECT_TRUE(CheckIsDirectory(deep).ok());
  ASSERT_TRUE(WriteFileAtomically(JoinPath(deep, "f"), {"x"}).ok());
  ASSERT_TRUE(WriteFileAtomically(JoinPath(dir.path(), "a/z"), {"y"}).ok());
  EXPECT_THAT(*ListDirectory(JoinPath(dir.path(), "a")), ElementsAre("b", "z"));

  const std::string file = JoinPath(dir.path(), "a/z");
  EXPECT_EQ(CreateDirectories(JoinPath(file, "sub")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckIsDirectory(file).message(), file + " is not a directory");

  ASSERT_TRUE(RemoveDirectoryTree(JoinPath(dir.path(), "a")).ok());
  EXPECT_FALSE(*PathExists(JoinPath(dir.path(), "a")));
  EXPECT_TRUE(RemoveDirectoryTree(JoinPath(dir.path(), "a")).ok());
}

TEST(FileSystemTest, ReadAtReadsExactRanges) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "f");
  ASSERT_TRUE(WriteFileAtomically(path, {"0123456789"}).ok());
  absl::StatusOr<std::unique_ptr<ReadOnlyFile>> file = ReadOnlyFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->size(), 10);
  std::string out(4, ' ');
  ASSERT_TRUE((*file)->ReadAt(3, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out, "3456");
  absl::Status past_end = (*file)->ReadAt(8, absl::MakeSpan(out));
  EXPECT_EQ(past_end.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(past_end.message(), HasSubstr(path));
}

}  // namespace
}  // namespace distrt
