#include "runtime/export/npy_file.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// The header's dict, as NumPy parses it.
std::string DictOf(const std::string& header) {
  const size_t length = static_cast<unsigned char>(header[8]) |
                        static_cast<unsigned char>(header[9]) << 8;
  return header.substr(10, length);
}

TEST(NpyHeaderTest, IsNumpysVersionOneWithDataAlignedTo64Bytes) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{}, {7}, {3, 4}, {2, 0, 5}}) {
    absl::StatusOr<std::string> header = NpyHeader(NpyType::kFloat32, shape);
    ASSERT_TRUE(header.ok()) << header.status();
    EXPECT_EQ(header->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_EQ(header->size() % 64, 0u);
    EXPECT_EQ(header->size(), 10 + DictOf(*header).size());
    EXPECT_EQ(header->back(), '\n');
  }
  EXPECT_THAT(DictOf(*NpyHeader(NpyType::kFloat32, {3, 4})),
              HasSubstr("{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (3, 4), }"));
  // A 1-tuple needs its comma, a scalar is ().
  EXPECT_THAT(DictOf(*NpyHeader(NpyType::kInt64, {7})),
              HasSubstr("'descr': '<i8'"));
  EXPECT_THAT(DictOf(*NpyHeader(NpyType::kInt64, {7})),
              HasSubstr("'shape': (7,)"));
  EXPECT_THAT(DictOf(*NpyHeader(NpyType::kFloat32, {})),
              HasSubstr("'shape': ()"));
  EXPECT_EQ(NpyHeader(NpyType::kFloat32, {2, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NpyWriterTest, WritesTheHeaderThenTheElementsInPieces) {
  TestDir dir;
  const std::string path = dir.path() + "/a.npy";
  absl::StatusOr<std::unique_ptr<NpyWriter>> writer =
      NpyWriter::Create(path, NpyType::kFloat32, {2, 3});
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<float> first = {1, 2, 3, 4};
  const std::vector<float> second = {5, -6.5f};
  ASSERT_TRUE((*writer)->Append(first).ok());
  ASSERT_TRUE((*writer)->Append(second).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(static_cast<int64_t>(bytes->size()), (*writer)->file_bytes());
  const std::string header = *NpyHeader(NpyType::kFloat32, {2, 3});
  ASSERT_EQ(bytes->size(), header.size() + 6 * sizeof(float));
  EXPECT_EQ(bytes->substr(0, header.size()), header);
  std::vector<float> data(6);
  std::memcpy(data.data(), bytes->data() + header.size(), 6 * sizeof(float));
  EXPECT_EQ(data, (std::vector<float>{1, 2, 3, 4, 5, -6.5f}));
}

TEST(NpyWriterTest, RefusesTooManyOrTooFewElementsOrTheWrongType) {
  TestDir dir;
  const std::string path = dir.path() + "/ids.npy";
  auto writer = NpyWriter::Create(path, NpyType::kInt64, {2});
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<int64_t> three = {1, 2, 3};
  const std::vector<float> floats = {1};
  EXPECT_EQ((*writer)->Append(three).code(), absl::StatusCode::kInternal);
  EXPECT_EQ((*writer)->Append(floats).code(), absl::StatusCode::kInternal);
  const std::vector<int64_t> one = {1};
  ASSERT_TRUE((*writer)->Append(one).ok());
  const absl::Status short_commit = (*writer)->Commit();
  EXPECT_EQ(short_commit.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(short_commit.message(), HasSubstr(path));
  EXPECT_THAT(short_commit.message(), HasSubstr("1 elements written of the 2"));
  // Nothing under the final name.
  EXPECT_FALSE(*PathExists(path));
}

}  // namespace
}  // namespace distrt
