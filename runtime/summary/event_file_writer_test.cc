#include "runtime/summary/event_file_writer.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/summary/event_file_reader.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {

void PrintTo(const ScalarPoint& p, std::ostream* os) {
  *os << "{step " << p.step << ", " << p.tag << " = " << p.value << " at "
      << p.wall_time << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// --- Expected bytes, computed here independently of the code under test.

uint32_t BitwiseCrc32c(absl::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ ((crc & 1) != 0 ? 0x82F63B78u : 0);
    }
  }
  return ~crc;
}

uint32_t ReferenceMask(uint32_t crc) {
  return static_cast<uint32_t>(
      ((((crc >> 15) | (uint64_t{crc} << 17)) & 0xFFFFFFFFu) + 0xA282EAD8u) &
      0xFFFFFFFFu);
}

std::string LittleEndian(uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>(value >> 8 * i));
  return out;
}

// A TFRecord: length, masked CRC of the length, data, masked CRC of data.
std::string Frame(absl::string_view data) {
  const std::string length = LittleEndian(data.size(), 8);
  return absl::StrCat(
      length, LittleEndian(ReferenceMask(BitwiseCrc32c(length)), 4), data,
      LittleEndian(ReferenceMask(BitwiseCrc32c(data)), 4));
}

// Protocol buffer wire format.
std::string Varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}
std::string Key(int field, int wire_type) {
  return Varint((field << 3) | wire_type);
}
std::string DoubleField(int field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return Key(field, 1) + LittleEndian(bits, 8);
}
std::string FloatField(int field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return Key(field, 5) + LittleEndian(bits, 4);
}
std::string VarintField(int field, uint64_t value) {
  return Key(field, 0) + Varint(value);
}
std::string BytesField(int field, absl::string_view payload) {
  return absl::StrCat(Key(field, 2), Varint(payload.size()), payload);
}

// Event{wall_time = 1, step = 2, file_version = 3, summary = 5};
// Summary{value = 1}; Value{tag = 1, simple_value = 2}.
std::string VersionEvent(double wall_time) {
  return DoubleField(1, wall_time) + BytesField(3, "brain.Event:2");
}
std::string ScalarEvent(
    double wall_time, int64_t step,
    const std::vector<std::pair<std::string, float>>& values) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    summary += BytesField(1, BytesField(1, tag) + FloatField(2, value));
  }
  return DoubleField(1, wall_time) + VarintField(2, step) +
         BytesField(5, summary);
}

std::string Hex(absl::string_view bytes) {
  return absl::BytesToHexString(bytes);
}

absl::Time UnixSeconds(double seconds) {
  return absl::UnixEpoch() + absl::Seconds(seconds);
}

std::string HostName() {
  char name[256] = {};
  EXPECT_EQ(gethostname(name, sizeof(name) - 1), 0);
  return name;
}

class EventFileWriterTest : public ::testing::Test {
 protected:
  std::unique_ptr<EventFileWriter> Create(absl::string_view suffix) {
    absl::StatusOr<std::unique_ptr<EventFileWriter>> writer =
        EventFileWriter::Create(log_dir_, suffix);
    EXPECT_TRUE(writer.ok()) << writer.status();
    return writer.ok() ? *std::move(writer) : nullptr;
  }

  std::string Contents(const std::string& path) {
    absl::StatusOr<std::string> contents = ReadFileToString(path);
    EXPECT_TRUE(contents.ok()) << contents.status();
    return contents.value_or("");
  }

  // Replaces the file's contents (without fsync: tests rewrite files
  // thousands of times).
  void Overwrite(const std::string& path, absl::string_view contents) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(contents.data(), contents.size());
    file.close();
    ASSERT_TRUE(file.good()) << "cannot rewrite " << path;
  }

  TestDir dir_;
  const std::string log_dir_ = JoinPath(dir_.path(), "logs/run1");
};

TEST_F(EventFileWriterTest, FileNameAndVersionRecord) {
  const absl::Time before = absl::Now();
  std::unique_ptr<EventFileWriter> writer = Create("chief");
  ASSERT_NE(writer, nullptr);
  const absl::Time after = absl::Now();

  absl::StatusOr<std::vector<std::string>> names = ListDirectory(log_dir_);
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_THAT(*names, SizeIs(1));
  const std::string& name = (*names)[0];
  EXPECT_EQ(writer->path(), JoinPath(log_dir_, name));
  // events.out.tfevents.<10-digit seconds>.<hostname>.chief
  const std::string prefix = "events.out.tfevents.";
  ASSERT_TRUE(absl::StartsWith(name, prefix)) << name;
  const std::string seconds_text = name.substr(prefix.size(), 10);
  for (const char c : seconds_text) ASSERT_TRUE(absl::ascii_isdigit(c)) << name;
  EXPECT_EQ(name.substr(prefix.size() + 10),
            absl::StrCat(".", HostName(), ".chief"));
  int64_t seconds = 0;
  ASSERT_TRUE(absl::SimpleAtoi(seconds_text, &seconds));

  // The whole file is one record: Event{wall_time, file_version}.
  const std::string contents = Contents(writer->path());
  ASSERT_EQ(contents.size(), 12 + 24 + 4) << Hex(contents);
  double wall_time;
  std::memcpy(&wall_time, contents.data() + 13, sizeof(wall_time));
  EXPECT_EQ(Hex(contents), Hex(Frame(VersionEvent(wall_time))));
  EXPECT_GE(wall_time,
            absl::ToDoubleSeconds(before - absl::UnixEpoch()) - 1e-3);
  EXPECT_LE(wall_time, absl::ToDoubleSeconds(after - absl::UnixEpoch()) + 1e-3);
  EXPECT_EQ(seconds, static_cast<int64_t>(std::floor(wall_time)));

  // And our reader agrees.
  absl::StatusOr<std::vector<summary::Event>> events =
      ReadEvents(writer->path());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(1));
  EXPECT_EQ((*events)[0].file_version(), "brain.Event:2");
  EXPECT_EQ((*events)[0].step(), 0);
  EXPECT_FALSE((*events)[0].has_summary());
}

TEST_F(EventFileWriterTest, NoSuffix) {
  std::unique_ptr<EventFileWriter> writer = Create("");
  ASSERT_NE(writer, nullptr);
  EXPECT_TRUE(absl::EndsWith(writer->path(), absl::StrCat(".", HostName())))
      << writer->path();
}

TEST_F(EventFileWriterTest, ScalarRecordsAreExactBytes) {
  std::unique_ptr<EventFileWriter> writer = Create("chief");
  ASSERT_NE(writer, nullptr);
  const size_t version_bytes = Contents(writer->path()).size();

  ASSERT_TRUE(writer->WriteScalars(1, {{"v/1", 1.5}}, UnixSeconds(256.5)).ok());
  ASSERT_TRUE(
      writer->WriteScalars(2, {{"v/22", 16.0}}, UnixSeconds(256.5)).ok());
  ASSERT_TRUE(writer
                  ->WriteScalars(300, {{"loss", 0.25}, {"eval/auc", -3.0}},
                                 UnixSeconds(1700000000.125))
                  .ok());
  ASSERT_TRUE(writer->Flush().ok());

  const std::string records = Contents(writer->path()).substr(version_bytes);
  // The first two as written by tensorboard_logger, an independent writer
  // (its serialization test).
  const std::string known =
      "19000000000000008bf1082809000000000008704010012a0c0a0a0a03762f31150000"
      "c03f2cecc087"
      "1a00000000000000129bd82d09000000000008704010022a0d0a0b0a04762f32321500"
      "0080418fa3b688";
  EXPECT_EQ(Hex(records.substr(0, known.size() / 2)), known);
  // All three from the wire format built by hand.
  EXPECT_EQ(Hex(records),
            Hex(Frame(ScalarEvent(256.5, 1, {{"v/1", 1.5f}})) +
                Frame(ScalarEvent(256.5, 2, {{"v/22", 16.0f}})) +
                Frame(ScalarEvent(1700000000.125, 300,
                                  {{"loss", 0.25f}, {"eval/auc", -3.0f}}))));
}

TEST_F(EventFileWriterTest, RoundTrip) {
  std::unique_ptr<EventFileWriter> writer = Create("chief");
  ASSERT_NE(writer, nullptr);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(writer
                  ->WriteScalars(0, {{"loss", 2.5}, {"examples/s", 1e6}},
                                 UnixSeconds(1000.25))
                  .ok());
  ASSERT_TRUE(writer->WriteScalars(10, {}, UnixSeconds(1001)).ok());
  ASSERT_TRUE(writer
                  ->WriteScalars(-1, {{"learning_rate", 0.1}, {"inf", inf}},
                                 UnixSeconds(1002))
                  .ok());
  ASSERT_TRUE(writer->WriteScalars(int64_t{1} << 40, {{"nan", nan}}).ok());
  const std::string path = writer->path();
  writer.reset();  // flushes and closes

  absl::StatusOr<std::vector<ScalarPoint>> points = ReadScalars(path);
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_THAT(*points, SizeIs(5));
  EXPECT_EQ((*points)[0], (ScalarPoint{0, "loss", 2.5f, 1000.25}));
  EXPECT_EQ((*points)[1], (ScalarPoint{0, "examples/s", 1e6f, 1000.25}));
  EXPECT_EQ((*points)[2], (ScalarPoint{-1, "learning_rate", 0.1f, 1002}));
  EXPECT_EQ((*points)[3], (ScalarPoint{-1, "inf", inf, 1002}));
  EXPECT_EQ((*points)[4].step, int64_t{1} << 40);
  EXPECT_EQ((*points)[4].tag, "nan");
  EXPECT_TRUE(std::isnan((*points)[4].value));
  EXPECT_GT((*points)[4].wall_time, 1.5e9);  // absl::Now() by default
  // Empty `scalars` wrote no record: version + 3.
  absl::StatusOr<std::vector<summary::Event>> events = ReadEvents(path);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, SizeIs(4));
}

TEST_F(EventFileWriterTest, EmptyTagIsRefused) {
  std::unique_ptr<EventFileWriter> writer = Create("chief");
  ASSERT_NE(writer, nullptr);
  const absl::Status status = writer->WriteScalars(7, {{"loss", 1}, {"", 2}});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("empty tag at step 7"));
  EXPECT_THAT(status.message(), HasSubstr(writer->path()));
  absl::StatusOr<std::vector<summary::Event>> events =
      ReadEvents(writer->path());
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, SizeIs(1));
}

TEST_F(EventFileWriterTest, TwoSuffixesMakeTwoFiles) {
  std::unique_ptr<EventFileWriter> chief = Create("chief");
  std::unique_ptr<EventFileWriter> eval = Create("eval");
  ASSERT_NE(chief, nullptr);
  ASSERT_NE(eval, nullptr);
  EXPECT_NE(chief->path(), eval->path());
  ASSERT_TRUE(chief->WriteScalars(5, {{"loss", 1}}, UnixSeconds(10)).ok());
  ASSERT_TRUE(eval->WriteScalars(5, {{"eval/loss", 2}}, UnixSeconds(11)).ok());

  absl::StatusOr<std::vector<std::string>> names = ListDirectory(log_dir_);
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_THAT(*names, SizeIs(2));
  EXPECT_TRUE(absl::EndsWith((*names)[0], ".chief")) << (*names)[0];
  EXPECT_TRUE(absl::EndsWith((*names)[1], ".eval")) << (*names)[1];
  EXPECT_THAT(*ReadScalars(chief->path()),
              ElementsAre(ScalarPoint{5, "loss", 1, 10}));
  EXPECT_THAT(*ReadScalars(eval->path()),
              ElementsAre(ScalarPoint{5, "eval/loss", 2, 11}));
}

TEST_F(EventFileWriterTest, BadSuffixOrDirectory) {
  absl::StatusOr<std::unique_ptr<EventFileWriter>> writer =
      EventFileWriter::Create(log_dir_, "a/b");
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(writer.status().message(), HasSubstr("a/b"));

  const std::string file = dir_.WriteFile("not_a_dir", "x");
  writer = EventFileWriter::Create(JoinPath(file, "run"), "chief");
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(writer.status().message(), HasSubstr(file));
}

TEST_F(EventFileWriterTest, ConcurrentWritersKeepRecordsWhole) {
  std::unique_ptr<EventFileWriter> writer = Create("chief");
  ASSERT_NE(writer, nullptr);
  constexpr int kThreads = 4;
  constexpr int kSteps = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      for (int step = 0; step < kSteps; ++step) {
        EXPECT_TRUE(writer
                        ->WriteScalars(step, {{absl::StrCat("thread", t), t},
                                              {"step", step}})
                        .ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(writer->Flush().ok());

  absl::StatusOr<std::vector<ScalarPoint>> points = ReadScalars(writer->path());
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_THAT(*points, SizeIs(kThreads * kSteps * 2));
  std::vector<int> next_step(kThreads, 0);
  for (size_t i = 0; i < points->size(); i += 2) {
    const ScalarPoint& mine = (*points)[i];
    const ScalarPoint& step = (*points)[i + 1];
    int t = 0;
    ASSERT_TRUE(absl::SimpleAtoi(mine.tag.substr(6), &t)) << mine.tag;
    EXPECT_EQ(mine.value, t);
    EXPECT_EQ(step.tag, "step");
    EXPECT_EQ(mine.step, next_step[t]);
    EXPECT_EQ(step.value, next_step[t]);
    ++next_step[t];
  }
  EXPECT_THAT(next_step, ElementsAre(kSteps, kSteps, kSteps, kSteps));
}

// --- The reader's checks.

class EventFileReaderTest : public EventFileWriterTest {
 protected:
  void SetUp() override {
    std::unique_ptr<EventFileWriter> writer = Create("chief");
    ASSERT_NE(writer, nullptr);
    path_ = writer->path();
    ASSERT_TRUE(writer->WriteScalars(1, {{"loss", 3}}, UnixSeconds(5)).ok());
    ASSERT_TRUE(writer->WriteScalars(2, {{"loss", 2}}, UnixSeconds(6)).ok());
    writer.reset();
    contents_ = Contents(path_);
    // Records: the version at 0 (40 bytes), then 26 bytes of data each at
    // 40 and 82.
    ASSERT_EQ(contents_.size(), 40 + 2 * (12 + 26 + 4));
  }

  std::string path_;
  std::string contents_;
};

TEST_F(EventFileReaderTest, ReadsRecordByRecord) {
  absl::StatusOr<std::unique_ptr<EventFileReader>> reader =
      EventFileReader::Open(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  summary::Event event;
  ASSERT_TRUE((*reader)->ReadEvent(&event).ok());
  EXPECT_EQ(event.file_version(), "brain.Event:2");
  EXPECT_EQ((*reader)->offset(), 40);
  ASSERT_TRUE((*reader)->ReadEvent(&event).ok());
  EXPECT_EQ(event.step(), 1);
  ASSERT_TRUE((*reader)->ReadEvent(&event).ok());
  EXPECT_EQ(event.step(), 2);
  EXPECT_EQ((*reader)->offset(), static_cast<int64_t>(contents_.size()));
  EXPECT_EQ((*reader)->ReadEvent(&event).code(), absl::StatusCode::kOutOfRange);
}

TEST_F(EventFileReaderTest, CorruptByteIsDataLoss) {
  // The second record's data.
  std::string corrupt = contents_;
  corrupt[40 + 12 + 3] ^= 0x01;
  Overwrite(path_, corrupt);
  absl::StatusOr<std::vector<ScalarPoint>> points = ReadScalars(path_);
  EXPECT_EQ(points.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(points.status().message(),
              HasSubstr(absl::StrCat("corrupt record data in event file ",
                                     path_, " at offset 40")));

  // The third record's length.
  corrupt = contents_;
  corrupt[82] ^= 0x40;
  Overwrite(path_, corrupt);
  points = ReadScalars(path_);
  EXPECT_EQ(points.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(points.status().message(),
              HasSubstr(absl::StrCat("corrupt record length in event file ",
                                     path_, " at offset 82")));
}

TEST_F(EventFileReaderTest, EveryFlippedBitIsDetected) {
  for (size_t i = 0; i < contents_.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string corrupt = contents_;
      corrupt[i] ^= static_cast<char>(1 << bit);
      Overwrite(path_, corrupt);
      EXPECT_EQ(ReadEvents(path_).status().code(), absl::StatusCode::kDataLoss)
          << "byte " << i << " bit " << bit;
    }
  }
}

TEST_F(EventFileReaderTest, TruncatedFileIsReportedAsSuch) {
  for (size_t size = 0; size < contents_.size(); ++size) {
    Overwrite(path_, contents_.substr(0, size));
    absl::StatusOr<std::vector<summary::Event>> events = ReadEvents(path_);
    if (size == 0 || size == 40 || size == 82) {
      ASSERT_TRUE(events.ok()) << size << ": " << events.status();
      EXPECT_THAT(*events, SizeIs(size == 0 ? 0 : size == 40 ? 1 : 2));
      continue;
    }
    EXPECT_EQ(events.status().code(), absl::StatusCode::kDataLoss) << size;
    EXPECT_THAT(
        events.status().message(),
        HasSubstr(absl::StrCat("truncated record in event file ", path_)))
        << size;
  }
  Overwrite(path_, contents_.substr(0, 82 + 20));
  EXPECT_THAT(ReadEvents(path_).status().message(),
              HasSubstr(absl::StrCat(
                  "at offset 82: the file ends 20 bytes into a record of 26 "
                  "data bytes plus 16 bytes of framing")));
  Overwrite(path_, contents_.substr(0, 40 + 5));
  EXPECT_THAT(ReadEvents(path_).status().message(),
              HasSubstr("at offset 40: the file ends 5 bytes into the 12-byte "
                        "record header"));
}

TEST_F(EventFileReaderTest, HugeLengthWithValidCrcIsTruncationNotAllocation) {
  std::string header = LittleEndian(uint64_t{1} << 62, 8);
  header += LittleEndian(ReferenceMask(BitwiseCrc32c(header)), 4);
  Overwrite(path_, contents_ + header + "abcd");
  const absl::Status status = ReadEvents(path_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("truncated record"));
  EXPECT_THAT(status.message(), HasSubstr("at offset 124"));
}

TEST_F(EventFileReaderTest, ValidRecordThatIsNotAnEvent) {
  // A summary field that claims 5 bytes of which 2 follow.
  Overwrite(path_, contents_ + Frame(absl::StrCat(Key(5, 2), Varint(5), "ab")));
  const absl::Status status = ReadEvents(path_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              HasSubstr("at offset 124 is not a valid Event"));
}

TEST(EventFileReaderOpenTest, MissingFile) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "events.out.tfevents.none");
  const absl::Status status = ReadScalars(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(path));
}

}  // namespace
}  // namespace distrt
