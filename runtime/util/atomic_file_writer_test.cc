#include "runtime/util/atomic_file_writer.h"

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.ok() ? *contents : "";
}

TEST(AtomicFileWriterTest, PathKeepsItsOldContentsUntilCommit) {
  TestDir dir;
  const std::string path = dir.WriteFile("data.txt", "old");
  AtomicFileWriter::Options options;
  options.buffer_bytes = 4;  // pieces smaller and larger than the buffer
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file =
      AtomicFileWriter::Create(path, options);
  ASSERT_TRUE(file.ok()) << file.status();
  std::string expected;
  for (const char* piece : {"a", "bc", "defghij", "", "k", "lmnopqrstuvwxyz"}) {
    ASSERT_TRUE((*file)->Append(piece).ok());
    expected += piece;
  }
  ASSERT_TRUE((*file)->Finish().ok());
  EXPECT_EQ(Read(path), "old");
  EXPECT_EQ(ListDirectory(dir.path())->size(), 2u);  // and the temporary
  EXPECT_EQ((*file)->Append("late").code(),
            absl::StatusCode::kFailedPrecondition);

  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(Read(path), expected);
  EXPECT_THAT(*ListDirectory(dir.path()), ElementsAre("data.txt"));
  EXPECT_TRUE((*file)->Commit().ok());  // once is enough
}

TEST(AtomicFileWriterTest, AnUncommittedWriterLeavesNothingBehind) {
  TestDir dir;
  const std::string path = dir.WriteFile("data.txt", "old");
  {
    absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file =
        AtomicFileWriter::Create(path);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Append("new").ok());
  }
  EXPECT_EQ(Read(path), "old");
  EXPECT_THAT(*ListDirectory(dir.path()), ElementsAre("data.txt"));
}

TEST(AtomicFileWriterTest, TheFileGetsExactlyItsMode) {
  TestDir dir;
  const std::string path = dir.WriteFile("key.pem", "old");
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  AtomicFileWriter::Options options;
  options.mode = 0600;
  const mode_t old_umask = umask(0077);  // would not matter either way
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file =
      AtomicFileWriter::Create(path, options);
  umask(old_umask);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Commit().ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(Read(path), "");
}

TEST(AtomicFileWriterTest, AMissingDirectoryIsNamed) {
  TestDir dir;
  const std::string missing = JoinPath(dir.path(), "missing");
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file =
      AtomicFileWriter::Create(JoinPath(missing, "f"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(),
              HasSubstr("directory " + missing + " does not exist"));
}

TEST(WriteFileAtomicallyTest, WritesThePiecesInOrder) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "index");
  const std::vector<absl::string_view> pieces = {"one ", "two ", "three"};
  ASSERT_TRUE(WriteFileAtomically(path, pieces).ok());
  EXPECT_EQ(Read(path), "one two three");
}

}  // namespace
}  // namespace distrt
