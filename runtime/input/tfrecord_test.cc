#include <zlib.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/example.pb.h"
#include "runtime/input/record_reader.h"
#include "runtime/input/tfrecord_reader.h"
#include "runtime/input/tfrecord_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/subprocess.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The independent implementation (standard-library Python, written from
// TF's documentation): a second reading of the format to check against.
constexpr char kReference[] =
    "runtime/input/testdata/tfrecord/tfrecord_reference.py";

// "hello" and an empty record, framed by hand. The CRCs were computed with
// the reference script's bit-by-bit CRC32C, not with the code under test.
const std::string& HandWrittenFile() {
  static const std::string* const bytes =
      new std::string(absl::HexStringToBytes(
          "0500000000000000"
          "eab2043e"
          "68656c6c6f"  // "hello"
          "bb1f1c19"
          "0000000000000000"
          "29039807"
          "d8ea82a2"));  // masked_crc32c("") == the mask's delta
  return *bytes;
}

// The uncompressed stream `records` make, framed by TfRecordWriter.
std::string Frame(const std::vector<std::string>& records,
                  const std::string& scratch_path) {
  auto writer = TfRecordWriter::Open(scratch_path, TfRecordCompression::kNone);
  EXPECT_TRUE(writer.ok()) << writer.status();
  if (!writer.ok()) return "";
  for (const std::string& record : records) {
    EXPECT_TRUE((*writer)->Write(record).ok());
  }
  EXPECT_TRUE((*writer)->Close().ok());
  absl::StatusOr<std::string> bytes = ReadFileToString(scratch_path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

// One gzip member holding `data`, made with zlib directly.
std::string Gzip(absl::string_view data) {
  z_stream z;
  std::memset(&z, 0, sizeof(z));
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS,
                         8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = data.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = out.size();
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct ReadResult {
  std::vector<std::string> records;
  std::vector<RecordPosition> positions;  // where each record started
  RecordPosition end;
  absl::Status status;  // of the call that stopped the reading
};

ReadResult ReadAll(const std::string& path, TfRecordCompression compression,
                   const RecordPosition& start = {}) {
  ReadResult result;
  auto reader = TfRecordReader::Open(path, compression, nullptr, start);
  if (!reader.ok()) {
    result.status = reader.status();
    return result;
  }
  std::string record;
  while (true) {
    const RecordPosition position = (*reader)->position();
    absl::StatusOr<bool> next = (*reader)->Next(&record);
    if (!next.ok()) {
      result.status = next.status();
      // The error sticks.
      EXPECT_EQ((*reader)->Next(&record).status(), next.status());
      break;
    }
    if (!*next) break;
    result.records.push_back(record);
    result.positions.push_back(position);
  }
  result.end = (*reader)->position();
  return result;
}

absl::StatusOr<testing::SubprocessResult> RunReference(
    std::vector<std::string> args) {
  testing::SubprocessOptions options;
  options.argv = {"/usr/bin/python3", kReference};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.timeout = absl::Seconds(120);
  return testing::RunSubprocess(options);
}

// ---------------------------------------------------------------------------
// Checksums and the framing, against values computed independently.

TEST(TfRecordTest, MaskedCrc32cOfKnownVectors) {
  // The CRC32C check values (RFC 3720 B.4), masked by hand:
  // rotr(0xE3069283, 15) = 0x2507C60D, + 0xA282EAD8 = 0xC78AB0E5.
  EXPECT_EQ(MaskedCrc32c("123456789"), 0xC78AB0E5u);
  EXPECT_EQ(MaskedCrc32c(std::string(32, '\0')), 0x0FD7FFFAu);    // 0x8A9136AA
  EXPECT_EQ(MaskedCrc32c(std::string(32, '\xff')), 0xF909B029u);  // 0x62A8AB43
  EXPECT_EQ(MaskedCrc32c(""), 0xA282EAD8u);
}

TEST(TfRecordTest, ReadsAHandWrittenFile) {
  TestDir dir;
  const std::string path = dir.WriteFile("hand.tfrecord", HandWrittenFile());
  ReadResult read = ReadAll(path, TfRecordCompression::kNone);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_THAT(read.records, ElementsAre("hello", ""));
  ASSERT_EQ(read.positions.size(), 2u);
  EXPECT_EQ(read.positions[1].offset, 21);
  EXPECT_EQ(read.positions[1].index, 1);
  EXPECT_EQ(read.positions[1].line, 0);
  EXPECT_EQ(read.end.offset, 37);
  EXPECT_EQ(read.end.index, 2);
}

TEST(TfRecordTest, WriterWritesTheHandWrittenBytes) {
  TestDir dir;
  EXPECT_EQ(absl::BytesToHexString(
                Frame({"hello", ""}, JoinPath(dir.path(), "w.tfrecord"))),
            absl::BytesToHexString(HandWrittenFile()));
}

// ---------------------------------------------------------------------------
// Options

TEST(TfRecordTest, ParsesCompressionNames) {
  EXPECT_EQ(*ParseTfRecordCompression(""), TfRecordCompression::kNone);
  EXPECT_EQ(*ParseTfRecordCompression("none"), TfRecordCompression::kNone);
  EXPECT_EQ(*ParseTfRecordCompression("NONE"), TfRecordCompression::kNone);
  EXPECT_EQ(*ParseTfRecordCompression("gzip"), TfRecordCompression::kGzip);
  EXPECT_EQ(*ParseTfRecordCompression("GZip"), TfRecordCompression::kGzip);
  absl::StatusOr<TfRecordCompression> zlib = ParseTfRecordCompression("zlib");
  EXPECT_EQ(zlib.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zlib.status().message(), HasSubstr("\"zlib\""));
  EXPECT_THAT(zlib.status().message(), HasSubstr("\"none\""));
  EXPECT_THAT(zlib.status().message(), HasSubstr("\"gzip\""));
  EXPECT_EQ(TfRecordCompressionName(TfRecordCompression::kGzip), "gzip");
  EXPECT_EQ(TfRecordCompressionName(TfRecordCompression::kNone), "none");
}

TEST(TfRecordTest, GuessesCompressionFromTheFileName) {
  EXPECT_EQ(TfRecordCompressionForPath("a/train.tfrecord.gz"),
            TfRecordCompression::kGzip);
  EXPECT_EQ(TfRecordCompressionForPath("train-00001.GZIP"),
            TfRecordCompression::kGzip);
  EXPECT_EQ(TfRecordCompressionForPath("train.tfrecord"),
            TfRecordCompression::kNone);
  EXPECT_EQ(TfRecordCompressionForPath("gz/train"), TfRecordCompression::kNone);
}

TEST(TfRecordTest, FormatNamesAndOpensByFileName) {
  EXPECT_EQ(TfRecordFormat(TfRecordCompression::kNone, nullptr).name(),
            "tfrecord");
  EXPECT_EQ(TfRecordFormat(TfRecordCompression::kGzip, nullptr).name(),
            "tfrecord (gzip)");
  TestDir dir;
  const std::string plain = JoinPath(dir.path(), "a.tfrecord");
  const std::string gzip = JoinPath(dir.path(), "a.tfrecord.gz");
  for (const std::string& path : {plain, gzip}) {
    auto writer = TfRecordWriter::Open(path, TfRecordCompressionForPath(path));
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Write("x").ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  TfRecordFormat by_name(std::nullopt, nullptr);
  EXPECT_EQ(by_name.name(), "tfrecord (gzip by name)");
  for (const std::string& path : {plain, gzip}) {
    absl::StatusOr<std::unique_ptr<RecordReader>> reader =
        by_name.Open(path, {});
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::string record;
    absl::StatusOr<bool> next = (*reader)->Next(&record);
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_TRUE(*next);
    EXPECT_EQ(record, "x");
    EXPECT_EQ((*reader)->path(), path);
  }
}

// ---------------------------------------------------------------------------
// Round trips, both compressions

class TfRecordRoundTripTest
    : public ::testing::TestWithParam<TfRecordCompression> {
 protected:
  // Empty records, one larger than the reader's buffer (128 KiB) and the
  // writer's (256 KiB), and many small ones that share buffers.
  static std::vector<std::string> Records() {
    std::vector<std::string> records = {"", "first", ""};
    std::string large(600 << 10, '\0');
    for (size_t i = 0; i < large.size(); ++i) {
      large[i] = static_cast<char>((i * 131) ^ (i >> 9));
    }
    records.push_back(large);
    for (int i = 0; i < 3000; ++i) {
      records.push_back(absl::StrCat("record ", i, std::string(i % 97, 'z')));
    }
    records.push_back("");
    return records;
  }

  std::string Write(const std::vector<std::string>& records,
                    TfRecordWriterOptions options = {}) {
    options.compression = GetParam();
    const std::string path = JoinPath(dir_.path(), "data.tfrecord");
    auto writer = TfRecordWriter::Open(path, options);
    EXPECT_TRUE(writer.ok()) << writer.status();
    if (!writer.ok()) return path;
    int64_t bytes = 0;
    for (const std::string& record : records) {
      EXPECT_EQ((*writer)->bytes(), bytes);
      EXPECT_TRUE((*writer)->Write(record).ok());
      bytes += record.size() + 16;
    }
    EXPECT_EQ((*writer)->records(), static_cast<int64_t>(records.size()));
    EXPECT_TRUE((*writer)->Close().ok());
    EXPECT_TRUE((*writer)->Close().ok());
    EXPECT_EQ((*writer)->Write("late").code(),
              absl::StatusCode::kFailedPrecondition);
    return path;
  }

  TestDir dir_;
};

TEST_P(TfRecordRoundTripTest, ReadsBackWhatWasWrittenWithPositions) {
  const std::vector<std::string> records = Records();
  const std::string path = Write(records);
  ReadResult read = ReadAll(path, GetParam());
  ASSERT_TRUE(read.status.ok()) << read.status;
  ASSERT_EQ(read.records.size(), records.size());
  int64_t offset = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(read.records[i], records[i]) << "record " << i;
    EXPECT_EQ(read.positions[i].offset, offset) << "record " << i;
    EXPECT_EQ(read.positions[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(read.positions[i].line, 0);
    offset += records[i].size() + 16;
  }
  EXPECT_EQ(read.end.offset, offset);
  EXPECT_EQ(read.end.index, static_cast<int64_t>(records.size()));
  if (GetParam() == TfRecordCompression::kNone) {
    absl::StatusOr<std::string> bytes = ReadFileToString(path);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(static_cast<int64_t>(bytes->size()), offset);
  }

  absl::StatusOr<int64_t> count = CountTfRecords(path, GetParam());
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, static_cast<int64_t>(records.size()));
}

TEST_P(TfRecordRoundTripTest, ReopeningAtAReportedPositionResumesThere) {
  const std::vector<std::string> records = Records();
  const std::string path = Write(records);
  const ReadResult all = ReadAll(path, GetParam());
  ASSERT_TRUE(all.status.ok()) << all.status;
  for (size_t k :
       {size_t{1}, size_t{3}, size_t{4}, size_t{1500}, records.size() - 1}) {
    ReadResult rest = ReadAll(path, GetParam(), all.positions[k]);
    ASSERT_TRUE(rest.status.ok()) << rest.status;
    ASSERT_EQ(rest.records.size(), records.size() - k) << "from " << k;
    EXPECT_TRUE(std::equal(rest.records.begin(), rest.records.end(),
                           records.begin() + k))
        << "from " << k;
    EXPECT_EQ(rest.positions[0].offset, all.positions[k].offset);
    EXPECT_EQ(rest.positions[0].index, static_cast<int64_t>(k));
    EXPECT_EQ(rest.end.offset, all.end.offset);
    EXPECT_EQ(rest.end.index, all.end.index);
  }
  // At the end: nothing more.
  ReadResult at_end = ReadAll(path, GetParam(), all.end);
  ASSERT_TRUE(at_end.status.ok()) << at_end.status;
  EXPECT_TRUE(at_end.records.empty());
  EXPECT_EQ(at_end.end.index, all.end.index);

  // Past the end, or negative: refused.
  RecordPosition past = all.end;
  past.offset += 1;
  auto reader = TfRecordReader::Open(path, GetParam(), nullptr, past);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reader.status().message(), HasSubstr(path));
  RecordPosition negative;
  negative.offset = -16;
  EXPECT_EQ(
      TfRecordReader::Open(path, GetParam(), nullptr, negative).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_P(TfRecordRoundTripTest, SkipMovesPastRecordsAndNextResumes) {
  const std::vector<std::string> records = Records();
  const std::string path = Write(records);
  auto reader = TfRecordReader::Open(path, GetParam(), nullptr);
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<bool> skipped = (*reader)->Skip();
    ASSERT_TRUE(skipped.ok()) << skipped.status();
    ASSERT_TRUE(*skipped);
  }
  std::string record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(record, records[5]);
  EXPECT_EQ((*reader)->position().index, 6);
}

TEST_P(TfRecordRoundTripTest, SmallWriterBuffersAndLevelsMakeTheSameRecords) {
  const std::vector<std::string> records = Records();
  for (size_t buffer_size : {size_t{1}, size_t{7}, size_t{4096}}) {
    for (int level : {-1, 0, 1, 9}) {
      TfRecordWriterOptions options;
      options.buffer_size = buffer_size;
      options.gzip_level = level;
      const std::vector<std::string> some(records.begin(),
                                          records.begin() + 50);
      const std::string path = Write(some, options);
      ReadResult read = ReadAll(path, GetParam());
      ASSERT_TRUE(read.status.ok()) << read.status;
      EXPECT_EQ(read.records, some) << buffer_size << " " << level;
    }
  }
}

TEST_P(TfRecordRoundTripTest, AnEmptyFileHasNoRecords) {
  const std::string path = dir_.WriteFile("empty.tfrecord", "");
  ReadResult read = ReadAll(path, GetParam());
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_TRUE(read.records.empty());
  EXPECT_EQ(*CountTfRecords(path, GetParam()), 0);
}

INSTANTIATE_TEST_SUITE_P(Compressions, TfRecordRoundTripTest,
                         ::testing::Values(TfRecordCompression::kNone,
                                           TfRecordCompression::kGzip),
                         [](const auto& info) {
                           return std::string(
                               TfRecordCompressionName(info.param));
                         });

TEST(TfRecordTest, WriterRejectsBadOptions) {
  TestDir dir;
  TfRecordWriterOptions options;
  options.gzip_level = 10;
  EXPECT_EQ(
      TfRecordWriter::Open(JoinPath(dir.path(), "x"), options).status().code(),
      absl::StatusCode::kInvalidArgument);
  auto missing_dir = TfRecordWriter::Open(
      JoinPath(dir.path(), "no/such/dir.tfrecord"), TfRecordCompression::kNone);
  EXPECT_EQ(missing_dir.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing_dir.status().message(), HasSubstr("no/such/dir"));
}

TEST(TfRecordTest, ReadsConcatenatedGzipMembers) {
  TestDir dir;
  const std::string stream =
      Frame({"one", "two", std::string(1000, 'x'), "four"},
            JoinPath(dir.path(), "scratch"));
  // Cut inside the third record: members need not end at records.
  const std::string path = dir.WriteFile(
      "cat.tfrecord.gz",
      absl::StrCat(Gzip(stream.substr(0, 60)), Gzip(stream.substr(60))));
  ReadResult read = ReadAll(path, TfRecordCompression::kGzip);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_THAT(read.records,
              ElementsAre("one", "two", std::string(1000, 'x'), "four"));
}

// ---------------------------------------------------------------------------
// Damage: each is DATA_LOSS naming the path, the record and its offset.

class TfRecordDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_ = Frame({"alpha", "bravo-bravo", "charlie"},
                    JoinPath(dir_.path(), "scratch"));
  }

  // Reads `stream` (damaged) written as is and gzip-compressed; expects
  // the records before `index` and then DATA_LOSS at record `index`, byte
  // `offset`, with `what` in the message (`gzip_what` for the gzip file,
  // when it differs).
  void ExpectDataLoss(const std::string& stream, int64_t index, int64_t offset,
                      const std::string& what,
                      std::optional<std::string> gzip_what = std::nullopt) {
    const std::vector<std::string> good = {"alpha", "bravo-bravo", "charlie"};
    for (TfRecordCompression compression :
         {TfRecordCompression::kNone, TfRecordCompression::kGzip}) {
      SCOPED_TRACE(TfRecordCompressionName(compression));
      const std::string path = dir_.WriteFile(
          absl::StrCat("bad-", TfRecordCompressionName(compression)),
          compression == TfRecordCompression::kGzip ? Gzip(stream) : stream);
      ReadResult read = ReadAll(path, compression);
      EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
      EXPECT_THAT(read.status.message(),
                  HasSubstr(absl::StrCat(path, ": record ", index, " at byte ",
                                         offset, ": ")));
      EXPECT_THAT(read.status.message(),
                  HasSubstr(compression == TfRecordCompression::kGzip
                                ? gzip_what.value_or(what)
                                : what));
      EXPECT_EQ(read.records,
                std::vector<std::string>(good.begin(), good.begin() + index));
      // Counting meets the same damage, except a bad data CRC, which it
      // does not check.
      absl::StatusOr<int64_t> count = CountTfRecords(path, compression);
      if (what.find("corrupt record data") == std::string::npos) {
        EXPECT_EQ(count.status().code(), absl::StatusCode::kDataLoss);
      }
    }
  }

  // Record 1 starts at byte 21 (16 + "alpha"), record 2 at 48.
  static constexpr int64_t kRecord1 = 21;
  static constexpr int64_t kRecord2 = 48;

  TestDir dir_;
  std::string stream_;
};

TEST_F(TfRecordDamageTest, BadLengthCrc) {
  std::string bad = stream_;
  bad[kRecord1] ^= 0x01;  // the length's low byte: 11 -> 10
  ExpectDataLoss(bad, 1, kRecord1, "corrupt record length");
}

TEST_F(TfRecordDamageTest, BadDataCrc) {
  std::string bad = stream_;
  bad[kRecord1 + 12 + 3] ^= 0x20;
  ExpectDataLoss(bad, 1, kRecord1, "corrupt record data");
}

TEST_F(TfRecordDamageTest, BadStoredDataCrc) {
  std::string bad = stream_;
  bad[kRecord2 - 1] ^= 0x80;  // record 1's data CRC
  ExpectDataLoss(bad, 1, kRecord1, "corrupt record data");
}

TEST_F(TfRecordDamageTest, TruncatedHeader) {
  ExpectDataLoss(stream_.substr(0, kRecord2 + 5), 2, kRecord2,
                 "truncated record header: the file ends after 5 of its 12");
}

TEST_F(TfRecordDamageTest, TruncatedData) {
  ExpectDataLoss(stream_.substr(0, kRecord2 + 12 + 3), 2, kRecord2,
                 "truncated record: its length is 7 bytes (+4 of CRC) but "
                 "only 3 bytes are left",
                 "truncated record: the file ends after 3 of its 7 bytes");
}

TEST_F(TfRecordDamageTest, TruncatedDataCrc) {
  ExpectDataLoss(stream_.substr(0, stream_.size() - 2), 2, kRecord2,
                 "truncated record: its length is 7 bytes (+4 of CRC) but "
                 "only 9 bytes are left",
                 "truncated record: the file ends inside the CRC");
}

// A header for `length` with a valid CRC: damage that the CRC misses.
std::string HeaderWithValidCrc(uint64_t length) {
  std::string header;
  for (int i = 0; i < 8; ++i)
    header.push_back(static_cast<char>(length >> (8 * i)));
  const uint32_t crc = MaskedCrc32c(header);
  for (int i = 0; i < 4; ++i)
    header.push_back(static_cast<char>(crc >> (8 * i)));
  return header;
}

TEST_F(TfRecordDamageTest, HugeLengthWithAValidCrc) {
  // Must not be allocated, whatever the file's size.
  const std::string bad =
      absl::StrCat(stream_.substr(0, kRecord2),
                   HeaderWithValidCrc(uint64_t{1} << 40), "short");
  ExpectDataLoss(bad, 2, kRecord2,
                 "record length 1099511627776 is larger than the limit of "
                 "2147483647 bytes");
}

TEST_F(TfRecordDamageTest, LengthLongerThanTheFile) {
  // 1 GiB, under the limit: an uncompressed file is checked against its
  // size; a GZIP one reads the data in growing pieces and so holds no more
  // than what is really there before finding the end.
  const std::string bad =
      absl::StrCat(stream_.substr(0, kRecord2),
                   HeaderWithValidCrc(uint64_t{1} << 30), "short");
  ExpectDataLoss(bad, 2, kRecord2,
                 "its length is 1073741824 bytes (+4 of CRC) but only 5 "
                 "bytes are left in the file",
                 "truncated record: the file ends after 5 of its 1073741824 "
                 "bytes of data");
}

TEST_F(TfRecordDamageTest, GarbageGzip) {
  const std::string path =
      dir_.WriteFile("garbage.gz", "this is not a gzip stream at all");
  ReadResult read = ReadAll(path, TfRecordCompression::kGzip);
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status.message(),
              HasSubstr(absl::StrCat(path,
                                     ": record 0 at byte 0: corrupt "
                                     "gzip stream")));
}

TEST_F(TfRecordDamageTest, TruncatedGzip) {
  const std::string gzip = Gzip(stream_);
  const std::string path =
      dir_.WriteFile("cut.gz", gzip.substr(0, gzip.size() - 10));
  ReadResult read = ReadAll(path, TfRecordCompression::kGzip);
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status.message(), HasSubstr(path));
  EXPECT_THAT(read.status.message(), HasSubstr("corrupt gzip stream"));
}

TEST_F(TfRecordDamageTest, DamagedGzipData) {
  std::string gzip = Gzip(stream_);
  gzip[gzip.size() / 2] ^= 0x55;
  const std::string path = dir_.WriteFile("flipped.gz", gzip);
  ReadResult read = ReadAll(path, TfRecordCompression::kGzip);
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status.message(), HasSubstr(path));
  EXPECT_THAT(read.status.message(), HasSubstr(": record "));
}

TEST(TfRecordTest, OpenAndReadErrorsNameThePath) {
  TestDir dir;
  const std::string missing = JoinPath(dir.path(), "missing.tfrecord");
  auto reader =
      TfRecordReader::Open(missing, TfRecordCompression::kNone, nullptr);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(reader.status().message(), HasSubstr(missing));

  // A directory opens but cannot be read (EISDIR).
  ReadResult read = ReadAll(dir.path(), TfRecordCompression::kNone);
  EXPECT_FALSE(read.status.ok());
  EXPECT_NE(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status.message(), HasSubstr(dir.path()));
}

// ---------------------------------------------------------------------------
// Against the independent Python implementation.

TEST(TfRecordPythonTest, ReferenceCrc32cPassesItsVectors) {
  absl::StatusOr<testing::SubprocessResult> run = RunReference({"selftest"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 0) << run->stderr_text;
  EXPECT_EQ(run->stdout_text, "ok\n");
}

TEST(TfRecordPythonTest, ReadsTheReferenceWritersExamples) {
  TestDir dir;
  for (const char* compression : {"none", "gzip", "gzip-members"}) {
    SCOPED_TRACE(compression);
    const bool gzip = std::string(compression) != "none";
    const std::string path = JoinPath(
        dir.path(),
        absl::StrCat(compression, gzip ? ".tfrecord.gz" : ".tfrecord"));
    absl::StatusOr<testing::SubprocessResult> run =
        RunReference({"write-examples", path, compression});
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->exit_code, 0) << run->stderr_text;

    // Through the format, as the pipeline opens files: compression by name.
    TfRecordFormat format(std::nullopt, nullptr);
    absl::StatusOr<std::unique_ptr<RecordReader>> reader =
        format.Open(path, {});
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::vector<std::string> records;
    std::string record;
    while (true) {
      absl::StatusOr<bool> next = (*reader)->Next(&record);
      ASSERT_TRUE(next.ok()) << next.status();
      if (!*next) break;
      records.push_back(record);
    }
    ASSERT_EQ(records.size(), 5u);
    for (int i = 0; i < 4; ++i) {
      SCOPED_TRACE(absl::StrCat("record ", i));
      tf::Example example;
      ASSERT_TRUE(example.ParseFromString(records[i]));
      const auto& features = example.features().feature();
      ASSERT_EQ(features.size(), 4u);
      ASSERT_EQ(features.count("label"), 1u);
      EXPECT_THAT(features.at("label").float_list().value(),
                  ElementsAre(i + 0.5f));
      ASSERT_EQ(features.count("dense"), 1u);
      EXPECT_THAT(features.at("dense").float_list().value(),
                  ElementsAre(static_cast<float>(i), -1.25f, 1e6f));
      ASSERT_EQ(features.count("ids"), 1u);
      EXPECT_THAT(features.at("ids").int64_list().value(),
                  ElementsAre(i, -i - 1, (int64_t{1} << 40) + i));
      ASSERT_EQ(features.count("name"), 1u);
      EXPECT_THAT(features.at("name").bytes_list().value(),
                  ElementsAre(absl::StrCat("row-", i), ""));
    }
    EXPECT_EQ(records[4], "");
    tf::Example empty;
    EXPECT_TRUE(empty.ParseFromString(records[4]));
    EXPECT_EQ(empty.features().feature_size(), 0);
  }
}

TEST(TfRecordPythonTest, ReferenceReaderReadsThisWritersFiles) {
  TestDir dir;
  std::vector<std::string> records = {"", "hello", std::string(300 << 10, 'q'),
                                      ""};
  records[2][12345] = '\x01';
  for (int i = 0; i < 200; ++i) {
    records.push_back(absl::StrCat("#", i, std::string(i, '\xfe')));
  }
  for (TfRecordCompression compression :
       {TfRecordCompression::kNone, TfRecordCompression::kGzip}) {
    const std::string name(TfRecordCompressionName(compression));
    SCOPED_TRACE(name);
    const std::string path = JoinPath(dir.path(), name);
    auto writer = TfRecordWriter::Open(path, compression);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const std::string& record : records) {
      ASSERT_TRUE((*writer)->Write(record).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());

    absl::StatusOr<testing::SubprocessResult> run =
        RunReference({"read", path, name});
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->exit_code, 0) << run->stderr_text;
    std::vector<std::string> lines =
        absl::StrSplit(run->stdout_text, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(lines[i], absl::StrCat(records[i].size(), ":",
                                       absl::BytesToHexString(records[i])))
          << "record " << i;
    }
  }
}

TEST(TfRecordPythonTest, ReferenceReaderRejectsDamage) {
  // The reference is a real checker, not one that accepts anything.
  TestDir dir;
  std::string bad = HandWrittenFile();
  bad[14] ^= 0x01;  // inside "hello"
  const std::string path = dir.WriteFile("bad.tfrecord", bad);
  absl::StatusOr<testing::SubprocessResult> run =
      RunReference({"read", path, "none"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 1);
  EXPECT_THAT(run->stderr_text, HasSubstr("record 0 at byte 0: bad data CRC"));
}

}  // namespace
}  // namespace distrt
