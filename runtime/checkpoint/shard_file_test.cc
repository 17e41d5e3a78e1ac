#include "runtime/checkpoint/shard_file.h"

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/crc32c.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::string_view Bytes(const std::vector<float>& v) {
  return absl::string_view(reinterpret_cast<const char*>(v.data()),
                           v.size() * sizeof(float));
}

absl::string_view Bytes(const std::vector<int64_t>& v) {
  return absl::string_view(reinterpret_cast<const char*>(v.data()),
                           v.size() * sizeof(int64_t));
}

class ShardFileTest : public ::testing::Test {
 protected:
  // Writes a shard with one variable "w" (values and one slot) and an int64
  // tensor; returns its size.
  int64_t WriteSample() {
    header_.set_shard_index(1);
    header_.set_num_shards(2);
    header_.set_step(100);
    ps::SavedVariable* w = header_.add_variables();
    w->mutable_spec()->set_name("w");
    ShardDataSection data;
    data.Add(ps::FLOAT32, Bytes(values_), w->mutable_values());
    data.Add(ps::FLOAT32, Bytes(slot_), w->add_slots());
    ps::SavedHashTable* table = header_.add_hash_tables();
    data.Add(ps::INT64, Bytes(ids_), table->mutable_ids());
    absl::StatusOr<int64_t> bytes = WriteShardFile(path_, header_, data);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.value_or(0);
  }

  // The file's bytes, changed by `edit`, written back.
  void Edit(const std::function<void(std::string&)>& edit) {
    absl::StatusOr<std::string> contents = ReadFileToString(path_);
    ASSERT_TRUE(contents.ok()) << contents.status();
    edit(*contents);
    ASSERT_TRUE(WriteFileAtomically(path_, {*contents}).ok());
  }

  absl::Status OpenStatus() { return ShardFileReader::Open(path_).status(); }

  TestDir dir_;
  const std::string path_ = JoinPath(dir_.path(), "shard-00001-of-00002.ckpt");
  ps::CheckpointShardHeader header_;
  const std::vector<float> values_ = {1.5f, -2.0f, 3.25f, 0.0f};
  const std::vector<float> slot_ = {0.1f, 0.2f, 0.3f, 0.4f};
  const std::vector<int64_t> ids_ = {-7, int64_t{1} << 62};
};

TEST_F(ShardFileTest, RoundTrip) {
  const int64_t size = WriteSample();
  EXPECT_THAT(*ListDirectory(dir_.path()),
              ElementsAre("shard-00001-of-00002.ckpt"));
  absl::StatusOr<std::unique_ptr<ShardFileReader>> reader =
      ShardFileReader::Open(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().SerializeAsString(),
            header_.SerializeAsString());
  EXPECT_EQ((*reader)->data_bytes(), 4 * 4 + 4 * 4 + 2 * 8);
  EXPECT_EQ(size, kShardPreambleBytes + header_.ByteSizeLong() +
                      (*reader)->data_bytes());
  const ps::SavedVariable& w = (*reader)->header().variables(0);
  EXPECT_EQ(w.values().offset(), 0);
  EXPECT_EQ(w.slots(0).offset(), 16);
  EXPECT_EQ(*(*reader)->ReadFloat32(w.values(), 4, "w values"), values_);
  EXPECT_EQ(*(*reader)->ReadFloat32(w.slots(0), 4, "w slot"), slot_);
  EXPECT_EQ(
      *(*reader)->ReadInt64((*reader)->header().hash_tables(0).ids(), 2, "ids"),
      ids_);
}

TEST_F(ShardFileTest, TensorChecksNameTheFileAndTheTensor) {
  WriteSample();
  std::unique_ptr<ShardFileReader> reader = *ShardFileReader::Open(path_);
  const ps::SavedTensor& values = reader->header().variables(0).values();
  absl::Status s =
      reader->ReadFloat32(values, 3, "variable \"w\" values").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), path_ +
                             ": variable \"w\" values has 16 bytes, expected "
                             "12 (3 FLOAT32 elements)");
  EXPECT_EQ(reader->ReadInt64(values, 2, "v").status().message(),
            path_ + ": v is stored as FLOAT32, expected INT64");
  EXPECT_EQ(
      reader->ReadFloat32(values, int64_t{1} << 40, "v").status().message(),
      path_ +
          ": v would have 1099511627776 FLOAT32 elements, more "
          "than the 48-byte data section holds");
  ps::SavedTensor outside = values;
  outside.set_offset(40);
  EXPECT_EQ(reader->ReadFloat32(outside, 4, "v").status().message(),
            path_ +
                ": v lies outside the data section: bytes [40, +16) of "
                "48 (truncated or corrupt)");
  outside.set_offset(-1);
  EXPECT_EQ(reader->ReadFloat32(outside, 4, "v").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(ShardFileTest, AFlippedDataByteIsCaughtByTheTensorsChecksum) {
  WriteSample();
  const int64_t data_start = kShardPreambleBytes + header_.ByteSizeLong();
  Edit([&](std::string& bytes) { bytes[data_start + 16 + 5] ^= 0x01; });
  std::unique_ptr<ShardFileReader> reader = *ShardFileReader::Open(path_);
  const ps::SavedVariable& w = reader->header().variables(0);
  EXPECT_TRUE(reader->ReadFloat32(w.values(), 4, "values").ok());
  absl::Status s =
      reader->ReadFloat32(w.slots(0), 4, "variable \"w\" slot \"m\"").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": variable \"w\" slot \"m\" is "
                                             "corrupt: its CRC32C is 0x"));
}

TEST_F(ShardFileTest, AFlippedHeaderByteIsCaughtByTheHeadersChecksum) {
  WriteSample();
  Edit([](std::string& bytes) { bytes[kShardPreambleBytes + 3] ^= 0x40; });
  EXPECT_EQ(OpenStatus().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(OpenStatus().message(),
              HasSubstr(path_ + ": the header is corrupt: its CRC32C is 0x"));
}

TEST_F(ShardFileTest, BadMagic) {
  WriteSample();
  Edit([](std::string& bytes) { bytes.replace(0, 8, "PK\x03\x04zip!"); });
  EXPECT_EQ(OpenStatus().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(OpenStatus().message(),
            path_ +
                " is not a checkpoint shard: it starts with "
                "\"PK\\x03\\x04zip!\", not \"DTCKPT01\"");
}

TEST_F(ShardFileTest, TruncatedFiles) {
  const int64_t size = WriteSample();
  // In the data section: the header is fine, the last tensor is not.
  Edit([&](std::string& bytes) { bytes.resize(size - 1); });
  std::unique_ptr<ShardFileReader> reader = *ShardFileReader::Open(path_);
  absl::Status s =
      reader->ReadInt64(reader->header().hash_tables(0).ids(), 2, "ids")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("ids lies outside the data section"));
  reader.reset();
  // In the header.
  Edit([&](std::string& bytes) { bytes.resize(kShardPreambleBytes + 5); });
  EXPECT_EQ(OpenStatus().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(OpenStatus().message(),
              HasSubstr("exceeds the 5 bytes after the preamble (truncated or "
                        "corrupt)"));
  // In the preamble.
  Edit([&](std::string& bytes) { bytes.resize(10); });
  EXPECT_EQ(OpenStatus().message(),
            path_ +
                " is not a checkpoint shard: it has 10 bytes, fewer than "
                "the 16-byte preamble (truncated?)");
}

TEST_F(ShardFileTest, AHugeHeaderLengthIsRefusedBeforeAllocating) {
  WriteSample();
  Edit([](std::string& bytes) { std::memset(&bytes[8], 0xFF, 4); });
  EXPECT_EQ(OpenStatus().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(OpenStatus().message(),
              HasSubstr(path_ + ": the header length 4294967295 exceeds"));
}

TEST_F(ShardFileTest, AHeaderThatDoesNotParse) {
  // A correct preamble and checksum around bytes that are no protobuf.
  const std::string garbage = "\xff\xff\xff";
  WriteSample();
  Edit([&](std::string& bytes) {
    std::string preamble = bytes.substr(0, 8);
    char length[4] = {3, 0, 0, 0};
    preamble.append(length, 4);
    const uint32_t crc = Crc32c(garbage);
    for (int i = 0; i < 4; ++i) preamble.push_back((crc >> (8 * i)) & 0xFF);
    bytes = preamble + garbage;
  });
  EXPECT_EQ(OpenStatus().message(),
            path_ + ": the header does not parse as a CheckpointShardHeader");
}

TEST_F(ShardFileTest, MissingFile) {
  EXPECT_EQ(OpenStatus().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(OpenStatus().message(), HasSubstr(path_));
}

}  // namespace
}  // namespace distrt
