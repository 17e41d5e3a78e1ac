#include "runtime/input/input_position_log.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/file_privileges.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

// Bytes of one entry holding `position`, computed from the format in the
// header (length, checksum, step, position) rather than from the code.
int64_t EntryBytes(const std::string& position) {
  return 4 + 4 + 8 + static_cast<int64_t>(position.size());
}

// A position as a pipeline might serialise it; its length varies with the
// step.
std::string PositionOf(int64_t step) {
  return absl::StrCat("file-", step % 7, "@", step * 131);
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return st.st_size;
}

// Opens the log, recording a test failure (and returning null) on an error.
std::unique_ptr<InputPositionLog> OpenLog(
    const std::string& path,
    InputPositionLog::Options options = InputPositionLog::Options()) {
  absl::StatusOr<std::unique_ptr<InputPositionLog>> log =
      InputPositionLog::Open(path, std::move(options));
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *std::move(log) : nullptr;
}

// Appends steps first..last with PositionOf(step).
void AppendSteps(InputPositionLog& log, int64_t first, int64_t last) {
  for (int64_t step = first; step <= last; ++step) {
    const absl::Status appended = log.Append(step, PositionOf(step));
    ASSERT_TRUE(appended.ok()) << "step " << step << ": " << appended;
  }
}

TEST(InputPositionLogTest, RoundTrip) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  const std::string binary("\0\xff\x01 shuffle-seed\0", 17);
  {
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->PositionAt(100), std::nullopt);
    ASSERT_TRUE(log->Append(3, "a").ok());
    ASSERT_TRUE(log->Append(5, "").ok());
    ASSERT_TRUE(log->Append(9, binary).ok());
    EXPECT_EQ(log->file_bytes(),
              EntryBytes("a") + EntryBytes("") + EntryBytes(binary));
  }
  EXPECT_EQ(FileSize(path),
            EntryBytes("a") + EntryBytes("") + EntryBytes(binary));
  std::unique_ptr<InputPositionLog> log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->torn_entries(), 0);
  EXPECT_THAT(log->PositionAt(3), Optional(std::string("a")));
  EXPECT_THAT(log->PositionAt(5), Optional(std::string("")));
  EXPECT_THAT(log->PositionAt(9), Optional(binary));
}

TEST(InputPositionLogTest, PositionAtPicksTheNewestEntryNotAfterTheStep) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  {
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->Append(10, "p10").ok());
    ASSERT_TRUE(log->Append(20, "first p20").ok());
    // A tie: the later entry for the same step wins.
    ASSERT_TRUE(log->Append(20, "p20").ok());
    ASSERT_TRUE(log->Append(30, "p30").ok());
  }
  std::unique_ptr<InputPositionLog> log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->PositionAt(-1), std::nullopt);
  EXPECT_EQ(log->PositionAt(0), std::nullopt);
  EXPECT_EQ(log->PositionAt(9), std::nullopt);  // below all
  EXPECT_THAT(log->PositionAt(10), Optional(std::string("p10")));
  EXPECT_THAT(log->PositionAt(19), Optional(std::string("p10")));
  EXPECT_THAT(log->PositionAt(20), Optional(std::string("p20")));
  EXPECT_THAT(log->PositionAt(29), Optional(std::string("p20")));
  EXPECT_THAT(log->PositionAt(30), Optional(std::string("p30")));
  EXPECT_THAT(log->PositionAt(INT64_MAX), Optional(std::string("p30")));
}

// Three entries (steps 1..3) as the log writes them.
std::string ThreeEntries(const TestDir& dir) {
  const std::string path = JoinPath(dir.path(), "three.log");
  {
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    if (log == nullptr) return "";
    AppendSteps(*log, 1, 3);
  }
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.ok() ? *contents : "";
}

// Opens `contents` as a log that should have lost its damaged tail, and
// checks that the tail was cut off the file: an entry appended now is read
// back without damage.
void ExpectTornTailDropped(const TestDir& dir, const std::string& name,
                           const std::string& contents, int64_t good_bytes) {
  SCOPED_TRACE(name);
  const std::string path = dir.WriteFile(name, contents);
  {
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->torn_entries(),
              static_cast<int64_t>(contents.size()) > good_bytes ? 1 : 0);
    EXPECT_EQ(log->file_bytes(), good_bytes);
    EXPECT_EQ(FileSize(path), good_bytes);
    EXPECT_THAT(log->PositionAt(100), Optional(PositionOf(2)));
    ASSERT_TRUE(log->Append(4, "p4").ok());
  }
  std::unique_ptr<InputPositionLog> log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->torn_entries(), 0);
  EXPECT_THAT(log->PositionAt(3), Optional(PositionOf(2)));
  EXPECT_THAT(log->PositionAt(4), Optional(std::string("p4")));
}

TEST(InputPositionLogTest, ATornLastEntryIsIgnoredAndCutOff) {
  TestDir dir;
  const std::string contents = ThreeEntries(dir);
  const int64_t last =
      static_cast<int64_t>(contents.size()) - EntryBytes(PositionOf(3));
  // Every cut inside the last entry, its header included; a cut at `last`
  // leaves two whole entries and nothing torn.
  for (int64_t cut = last; cut < static_cast<int64_t>(contents.size()); ++cut) {
    ExpectTornTailDropped(dir, absl::StrCat("cut-at-", cut),
                          contents.substr(0, cut), last);
  }
}

TEST(InputPositionLogTest, ACrashTailIsIgnoredAndCutOff) {
  TestDir dir;
  const std::string contents = ThreeEntries(dir);
  const int64_t last =
      static_cast<int64_t>(contents.size()) - EntryBytes(PositionOf(3));
  // A machine crash may leave the size updated but the data not: zeros.
  std::string zeroed = contents;
  for (size_t i = last; i < zeroed.size(); ++i) zeroed[i] = '\0';
  ExpectTornTailDropped(dir, "zeroed-last", zeroed, last);
  ExpectTornTailDropped(dir, "zeros-after-last", zeroed + std::string(100, 0),
                        last);
  // The last entry whole, but not what was written.
  std::string flipped = contents;
  flipped.back() ^= 0x20;
  ExpectTornTailDropped(dir, "flipped-last", flipped, last);
}

TEST(InputPositionLogTest, ADamagedMiddleEntryIsDataLossNamingItsOffset) {
  TestDir dir;
  const std::string contents = ThreeEntries(dir);
  const int64_t second = EntryBytes(PositionOf(1));

  std::string flipped = contents;
  flipped[second + 8 + 8] ^= 0x01;  // the second entry's position
  const std::string flipped_path = dir.WriteFile("flipped", flipped);
  absl::StatusOr<std::unique_ptr<InputPositionLog>> log =
      InputPositionLog::Open(flipped_path);
  EXPECT_EQ(log.status(),
            absl::DataLossError(absl::StrCat(
                "input position log ", flipped_path, ": entry at byte offset ",
                second, " fails its checksum")));

  std::string bad_length = contents;
  bad_length[second] = 3;  // shorter than a global step
  bad_length[second + 1] = bad_length[second + 2] = bad_length[second + 3] = 0;
  const std::string bad_length_path = dir.WriteFile("bad-length", bad_length);
  log = InputPositionLog::Open(bad_length_path);
  EXPECT_EQ(
      log.status(),
      absl::DataLossError(absl::StrCat(
          "input position log ", bad_length_path, ": entry at byte offset ",
          second, " has a payload length of 3, not in [8, 1048584]")));
  // Nothing was cut off a damaged file.
  EXPECT_EQ(FileSize(bad_length_path), static_cast<int64_t>(contents.size()));
}

TEST(InputPositionLogTest, CompactionBoundsTheFileAndKeepsWhatARestartNeeds) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  constexpr int64_t kCompactAbove = 16 << 10;
  constexpr int64_t kSteps = 100000;
  constexpr int64_t kCheckpointEvery = 100;
  // A checkpoint every kCheckpointEvery steps, committed a while after it
  // was taken: the committed step lags the live one by 100..199 steps, so
  // the entries kept (at most 200 of about 36 bytes) stay under the
  // threshold and the file stays under it plus one entry.
  int64_t step = 0;
  int compactions = 0;
  InputPositionLog::Options options;
  options.compact_above_bytes = kCompactAbove;
  options.committed_global_step = [&]() -> absl::StatusOr<int64_t> {
    ++compactions;
    return (step - kCheckpointEvery) / kCheckpointEvery * kCheckpointEvery;
  };
  const auto committed = [&] {
    return (step - kCheckpointEvery) / kCheckpointEvery * kCheckpointEvery;
  };
  std::unique_ptr<InputPositionLog> log = OpenLog(path, options);
  ASSERT_NE(log, nullptr);
  int64_t largest = 0;
  for (step = 1; step <= kSteps; ++step) {
    const absl::Status appended = log->Append(step, PositionOf(step));
    ASSERT_TRUE(appended.ok()) << "step " << step << ": " << appended;
    largest = std::max(largest, log->file_bytes());
    ASSERT_LE(log->file_bytes(), kCompactAbove + EntryBytes(PositionOf(step)))
        << "step " << step;
    if (step % 997 == 0 && committed() > 0) {
      ASSERT_THAT(log->PositionAt(committed()),
                  Optional(PositionOf(committed())))
          << "step " << step;
    }
  }
  step = kSteps;
  EXPECT_EQ(FileSize(path), log->file_bytes());
  log.reset();
  std::cout << "100k appends: " << compactions << " compactions, file at most "
            << largest << " bytes\n";
  EXPECT_GT(compactions, 100);

  // What a job restart from the committed checkpoint reads.
  log = OpenLog(path, options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->torn_entries(), 0);
  EXPECT_THAT(log->PositionAt(committed()), Optional(PositionOf(committed())));
  EXPECT_THAT(log->PositionAt(kSteps), Optional(PositionOf(kSteps)));
}

TEST(InputPositionLogTest, WithNoCommittedCheckpointOnlyTheNewestIsKept) {
  TestDir dir;
  InputPositionLog::Options none_committed;
  none_committed.compact_above_bytes = 1024;
  none_committed.committed_global_step = []() -> absl::StatusOr<int64_t> {
    return -1;
  };
  InputPositionLog::Options unset;
  unset.compact_above_bytes = 1024;
  for (const auto& [name, options] :
       {std::pair{"none-committed", none_committed},
        std::pair{"unset", unset}}) {
    SCOPED_TRACE(name);
    const std::string path = JoinPath(dir.path(), name);
    {
      std::unique_ptr<InputPositionLog> log = OpenLog(path, options);
      ASSERT_NE(log, nullptr);
      AppendSteps(*log, 1, 1000);
      EXPECT_LE(log->file_bytes(), 1024 + EntryBytes(PositionOf(1000)));
    }
    std::unique_ptr<InputPositionLog> log = OpenLog(path, options);
    ASSERT_NE(log, nullptr);
    EXPECT_THAT(log->PositionAt(1000), Optional(PositionOf(1000)));
    EXPECT_EQ(log->PositionAt(1), std::nullopt);
  }
}

TEST(InputPositionLogTest, ACommittedStepErrorKeepsTheEntryAndBacksOff) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  InputPositionLog::Options options;
  options.compact_above_bytes = 256;
  int asked = 0;
  options.committed_global_step = [&]() -> absl::StatusOr<int64_t> {
    ++asked;
    return absl::UnavailableError("ps0 unreachable");
  };
  std::unique_ptr<InputPositionLog> log = OpenLog(path, options);
  ASSERT_NE(log, nullptr);
  int64_t step = 1;
  absl::Status appended;
  for (; step < 100 && appended.ok(); ++step) {
    appended = log->Append(step, PositionOf(step));
  }
  const int64_t failed_step = step - 1;
  EXPECT_EQ(appended, absl::UnavailableError(absl::StrCat(
                          "compacting ", path,
                          ": asking for the committed global step: "
                          "ps0 unreachable")));
  EXPECT_EQ(asked, 1);
  // Not asked again at the next step, only after another 256 bytes.
  EXPECT_TRUE(log->Append(failed_step + 1, PositionOf(failed_step + 1)).ok());
  EXPECT_EQ(asked, 1);
  log.reset();
  log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_THAT(log->PositionAt(failed_step), Optional(PositionOf(failed_step)));
  EXPECT_THAT(log->PositionAt(failed_step + 1),
              Optional(PositionOf(failed_step + 1)));
}

TEST(InputPositionLogTest, ASmallerStepAbandonsTheNewerTimeline) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  {
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    AppendSteps(*log, 1, 10);
    // The job restarted from a checkpoint at step 5; this worker's first
    // step after it made the global step 6.
    ASSERT_TRUE(log->Append(6, "second timeline 6").ok());
    EXPECT_THAT(log->PositionAt(5), Optional(PositionOf(5)));
    for (int64_t step = 6; step <= 11; ++step) {
      EXPECT_THAT(log->PositionAt(step),
                  Optional(std::string("second timeline 6")))
          << step;
    }
  }
  // The file still holds the stale entries; reading it in order drops them.
  std::unique_ptr<InputPositionLog> log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_THAT(log->PositionAt(5), Optional(PositionOf(5)));
  for (int64_t step = 6; step <= 11; ++step) {
    EXPECT_THAT(log->PositionAt(step),
                Optional(std::string("second timeline 6")))
        << step;
  }

  // The next compaction leaves them out of the file.
  const std::string compacted_path = JoinPath(dir.path(), "compacted.log");
  InputPositionLog::Options options;
  options.compact_above_bytes = 1;
  options.committed_global_step = []() -> absl::StatusOr<int64_t> { return 3; };
  log = OpenLog(compacted_path, options);
  ASSERT_NE(log, nullptr);
  AppendSteps(*log, 1, 10);
  ASSERT_TRUE(log->Append(6, "second timeline 6").ok());
  // Appends until the file shrinks: a compaction.
  int64_t step = 7;
  for (int64_t bytes = log->file_bytes();
       log->file_bytes() >= bytes && step < 1000; ++step) {
    bytes = log->file_bytes();
    ASSERT_TRUE(log->Append(step, absl::StrCat("second timeline ", step)).ok());
  }
  ASSERT_LT(step, 1000) << "no compaction";
  absl::StatusOr<std::string> contents = ReadFileToString(compacted_path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_THAT(*contents, HasSubstr(PositionOf(3)));  // the committed step's
  EXPECT_THAT(*contents, HasSubstr(PositionOf(5)));
  for (int64_t stale = 6; stale <= 10; ++stale) {
    EXPECT_THAT(*contents, Not(HasSubstr(PositionOf(stale)))) << stale;
  }
  EXPECT_EQ(FileSize(compacted_path), log->file_bytes());
}

TEST(InputPositionLogTest, ResumeAtCutsTheAbandonedTimelineAtOnce) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  {
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    AppendSteps(*log, 1, 10);
  }
  {
    // A worker-only restart: the live global step is past every entry.
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    const int64_t bytes = log->file_bytes();
    absl::StatusOr<std::optional<std::string>> resume = log->ResumeAt(12);
    ASSERT_TRUE(resume.ok()) << resume.status();
    EXPECT_THAT(*resume, Optional(PositionOf(10)));
    EXPECT_EQ(log->file_bytes(), bytes);
  }
  {
    // A job restart from a checkpoint at step 5.
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    absl::StatusOr<std::optional<std::string>> resume = log->ResumeAt(5);
    ASSERT_TRUE(resume.ok()) << resume.status();
    EXPECT_THAT(*resume, Optional(PositionOf(5)));
    EXPECT_THAT(log->PositionAt(9), Optional(PositionOf(5)));
    // Appends follow the rewritten file.
    ASSERT_TRUE(log->Append(7, "second timeline 7").ok());
  }
  std::unique_ptr<InputPositionLog> log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->torn_entries(), 0);
  // Steps 6 and 8..10 of the old timeline are gone, from the file too.
  EXPECT_THAT(log->PositionAt(6), Optional(PositionOf(5)));
  EXPECT_THAT(log->PositionAt(9), Optional(std::string("second timeline 7")));
  int64_t expected_bytes = EntryBytes("second timeline 7");
  for (int64_t step = 1; step <= 5; ++step) {
    expected_bytes += EntryBytes(PositionOf(step));
  }
  EXPECT_EQ(FileSize(path), expected_bytes);

  // Back to before every entry: from the start, and an empty file.
  absl::StatusOr<std::optional<std::string>> resume = log->ResumeAt(0);
  ASSERT_TRUE(resume.ok()) << resume.status();
  EXPECT_EQ(*resume, std::nullopt);
  EXPECT_EQ(FileSize(path), 0);
}

TEST(InputPositionLogTest, CreatesAMissingDirectory) {
  TestDir dir;
  const std::string path =
      JoinPath(dir.path(), "checkpoints/input_positions/worker-3.log");
  {
    std::unique_ptr<InputPositionLog> log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->path(), path);
    ASSERT_TRUE(log->Append(1, "p1").ok());
  }
  std::unique_ptr<InputPositionLog> log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_THAT(log->PositionAt(1), Optional(std::string("p1")));
}

TEST(InputPositionLogTest, AnUnwritableDirectoryIsAClearError) {
  TestDir dir;
  const std::string locked = JoinPath(dir.path(), "locked");
  ASSERT_TRUE(CreateDirectories(locked).ok());
  ASSERT_EQ(chmod(locked.c_str(), 0555), 0);
  const std::string in_locked = JoinPath(locked, "worker-0.log");
  const std::string below_locked =
      JoinPath(locked, "input_positions/worker-0.log");
  // In a child held to file modes (root, as in CI, is not otherwise).
  EXPECT_EXIT(
      {
        const absl::Status dropped = DropFilePrivileges();
        const absl::Status file = InputPositionLog::Open(in_locked).status();
        const absl::Status directory =
            InputPositionLog::Open(below_locked).status();
        const bool clear =
            dropped.ok() &&
            file == absl::PermissionDeniedError("cannot open " + in_locked +
                                                ": Permission denied") &&
            directory == absl::PermissionDeniedError(
                             "cannot create directory " +
                             JoinPath(locked, "input_positions") +
                             ": Permission denied");
        if (!clear) {
          std::cerr << dropped << " / " << file << " / " << directory << "\n";
        }
        std::exit(clear ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  ASSERT_EQ(chmod(locked.c_str(), 0755), 0);  // so that TestDir can remove it
}

TEST(InputPositionLogTest, RejectsBadArguments) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  InputPositionLog::Options options;
  options.compact_above_bytes = 0;
  EXPECT_EQ(InputPositionLog::Open(path, options).status().code(),
            absl::StatusCode::kInvalidArgument);

  std::unique_ptr<InputPositionLog> log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->Append(-1, "p"),
            absl::InvalidArgumentError(absl::StrCat(
                "input position log ", path, ": negative global step -1")));
  const std::string huge(InputPositionLog::kMaxPositionBytes + 1, 'x');
  EXPECT_EQ(log->Append(1, huge).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(log->file_bytes(), 0);
  // The largest position is taken, and read back.
  const std::string largest(InputPositionLog::kMaxPositionBytes, 'y');
  ASSERT_TRUE(log->Append(1, largest).ok());
  log.reset();
  log = OpenLog(path);
  ASSERT_NE(log, nullptr);
  EXPECT_THAT(log->PositionAt(1), Optional(largest));
}

// Not a check: what one Append costs (one write(2), compactions amortised),
// printed for the test log.
TEST(InputPositionLogTest, MeasureAppendCost) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "worker-0.log");
  int64_t step = 0;
  InputPositionLog::Options options;  // the default threshold, 1 MiB
  options.committed_global_step = [&]() -> absl::StatusOr<int64_t> {
    return step - 1000;
  };
  std::unique_ptr<InputPositionLog> log = OpenLog(path, options);
  ASSERT_NE(log, nullptr);
  constexpr int64_t kWarmUp = 1000;
  constexpr int64_t kMeasured = 100000;
  const std::string position(32, 'p');  // file index, offset, shuffle state
  for (step = 1; step <= kWarmUp; ++step) {
    ASSERT_TRUE(log->Append(step, position).ok());
  }
  const auto start = std::chrono::steady_clock::now();
  for (; step <= kWarmUp + kMeasured; ++step) {
    const absl::Status appended = log->Append(step, position);
    if (!appended.ok()) FAIL() << appended;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cout << "InputPositionLog::Append: " << seconds / kMeasured * 1e9
            << " ns per call (" << kMeasured << " calls, 32-byte positions, "
            << "default compaction threshold)\n";
}

}  // namespace
}  // namespace distrt
