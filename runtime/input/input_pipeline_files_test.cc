// The streaming (file) side of InputPipeline, over a fake format whose
// records are "id,x" strings held in memory per path.

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_pipeline.h"
#include "runtime/input/input_position.h"
#include "runtime/input/record_reader.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// "id,x" -> an example with label id % 2, dense {x}, sparse id {id}.
// "bad" does not parse.
class FakeParser : public RecordParser {
 public:
  absl::StatusOr<Example> Parse(absl::string_view record,
                                const RecordLocation& where) const override {
    std::vector<absl::string_view> fields = absl::StrSplit(record, ',');
    int64_t id = 0;
    float x = 0;
    if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &id) ||
        !absl::SimpleAtof(fields[1], &x)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where.ToString(), ": \"", record, "\" is not id,x"));
    }
    Example example;
    example.label = static_cast<float>(id % 2);
    example.dense = {x};
    if (x < 0) example.dense.push_back(x);  // another shape
    example.ids = {id};
    example.values = {1};
    return example;
  }
};

class FakeFormat : public RecordFormat {
 public:
  // "damaged" records make the reader fail with DATA_LOSS there.
  std::map<std::string, std::vector<std::string>> files;
  mutable std::atomic<int64_t> records_read{0};
  mutable std::atomic<int64_t> opens{0};

  absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordPosition& start) const override;
  std::string name() const override { return "fake"; }
};

class FakeReader : public RecordReader {
 public:
  FakeReader(const FakeFormat* format, std::string path,
             const std::vector<std::string>* records, int64_t next)
      : format_(format),
        path_(std::move(path)),
        records_(records),
        next_(next),
        parser_(std::make_shared<FakeParser>()) {}

  absl::StatusOr<bool> Next(std::string* record) override {
    if (next_ >= static_cast<int64_t>(records_->size())) return false;
    if ((*records_)[next_] == "damaged") {
      return absl::DataLossError(
          absl::StrCat(path_, ": record ", next_, ": bad checksum"));
    }
    ++format_->records_read;
    *record = (*records_)[next_++];
    return true;
  }
  RecordPosition position() const override { return {next_ * 10, next_, 0}; }
  const std::string& path() const override { return path_; }
  std::shared_ptr<const RecordParser> parser() const override {
    return parser_;
  }

 private:
  const FakeFormat* format_;
  const std::string path_;
  const std::vector<std::string>* records_;
  int64_t next_;
  std::shared_ptr<const RecordParser> parser_;
};

absl::StatusOr<std::unique_ptr<RecordReader>> FakeFormat::Open(
    const std::string& path, const RecordPosition& start) const {
  auto it = files.find(path);
  if (it == files.end()) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  ++opens;
  return std::make_unique<FakeReader>(this, path, &it->second, start.index);
}

// Files f0.. with the given record counts; ids number the records of the
// whole data set in file order.
std::shared_ptr<FakeFormat> MakeFiles(const std::vector<int>& sizes) {
  auto format = std::make_shared<FakeFormat>();
  int id = 0;
  for (size_t f = 0; f < sizes.size(); ++f) {
    std::vector<std::string>& records = format->files[absl::StrCat("f", f)];
    for (int r = 0; r < sizes[f]; ++r, ++id) {
      records.push_back(absl::StrCat(id, ",", id * 0.5));
    }
  }
  return format;
}

InputShard WholeShard(const FakeFormat& format) {
  InputShard shard;
  for (const auto& [path, records] : format.files) shard.files.push_back(path);
  shard.total_files = static_cast<int>(shard.files.size());
  return shard;
}

InputPipeline::Options MakeOptions(int64_t per_replica, int replicas,
                                   int64_t epochs) {
  InputPipeline::Options options;
  options.per_replica_batch_size = per_replica;
  options.num_replicas = replicas;
  options.num_epochs = epochs;
  return options;
}

std::unique_ptr<InputPipeline> MustCreate(
    const InputShard& shard, std::shared_ptr<FakeFormat> format,
    const InputPipeline::Options& options,
    const InputPosition* resume = nullptr) {
  absl::StatusOr<std::unique_ptr<InputPipeline>> pipeline =
      InputPipeline::Create(shard, std::move(format), options, resume);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  return pipeline.ok() ? *std::move(pipeline) : nullptr;
}

// A step as comparable values: (epoch, step, ids per replica).
struct StepIds {
  int64_t epoch;
  int64_t step;
  std::vector<std::vector<int64_t>> ids;
  bool operator==(const StepIds& o) const {
    return epoch == o.epoch && step == o.step && ids == o.ids;
  }
};

StepIds IdsOf(const InputStep& step) {
  StepIds out{step.epoch, step.step_in_epoch, {}};
  for (const Batch& batch : step.replicas) {
    out.ids.push_back(batch.ids);
    // The rows are those of the ids (see FakeParser).
    for (int64_t i = 0; i < batch.size; ++i) {
      EXPECT_EQ(batch.dense[i], batch.ids[i] * 0.5f);
      EXPECT_EQ(batch.labels[i], static_cast<float>(batch.ids[i] % 2));
    }
  }
  return out;
}

// Every step until the end, which must be OUT_OF_RANGE; the positions too.
std::vector<InputStep> Drain(InputPipeline& pipeline,
                             absl::Status* end = nullptr) {
  std::vector<InputStep> steps;
  while (steps.size() < 100000) {
    absl::StatusOr<InputStep> step = pipeline.Next();
    if (!step.ok()) {
      if (end != nullptr) {
        *end = step.status();
      } else {
        EXPECT_EQ(step.status().code(), absl::StatusCode::kOutOfRange)
            << step.status();
      }
      return steps;
    }
    steps.push_back(*std::move(step));
  }
  ADD_FAILURE() << "the input does not end";
  return steps;
}

std::vector<int64_t> AllIds(const std::vector<InputStep>& steps) {
  std::vector<int64_t> ids;
  for (const InputStep& step : steps) {
    for (const Batch& batch : step.replicas) {
      ids.insert(ids.end(), batch.ids.begin(), batch.ids.end());
    }
  }
  return ids;
}

// tf.data's interleave order, worked out by hand: cycle 2, block 2 over
// files of 5, 2 and 3 records (ids a0-a4 = 0-4, b = 5-6, c = 7-9).
TEST(FileInputPipelineTest, InterleavesAsTfData) {
  std::shared_ptr<FakeFormat> format = MakeFiles({5, 2, 3});
  InputPipeline::Options options = MakeOptions(1, 1, 1);
  options.cycle_length = 2;
  options.block_length = 2;
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(WholeShard(*format), format, options);
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(pipeline->examples_per_epoch(), -1);
  EXPECT_EQ(pipeline->steps_per_epoch(), -1);
  std::vector<InputStep> steps = Drain(*pipeline);
  EXPECT_THAT(AllIds(steps), ElementsAre(0, 1, 5, 6, 2, 3, 4, 7, 8, 9));
  EXPECT_EQ(pipeline->records_read(), 10);
  EXPECT_EQ(pipeline->records_skipped(), 0);

  // cycle_length 1: the files one after the other.
  options.cycle_length = 1;
  pipeline = MustCreate(WholeShard(*format), format, options);
  EXPECT_THAT(AllIds(Drain(*pipeline)),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
}

// Steps and their split over replicas are as in memory: short last step,
// epochs never mixed.
TEST(FileInputPipelineTest, StepsSplitOverReplicasPerEpoch) {
  std::shared_ptr<FakeFormat> format = MakeFiles({4, 3});
  InputPipeline::Options options = MakeOptions(2, 2, 2);
  options.cycle_length = 1;
  std::vector<InputStep> steps =
      Drain(*MustCreate(WholeShard(*format), format, options));
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(IdsOf(steps[0]), (StepIds{0, 0, {{0, 1}, {2, 3}}}));
  EXPECT_EQ(IdsOf(steps[1]), (StepIds{0, 1, {{4, 5}, {6}}}));
  EXPECT_EQ(IdsOf(steps[2]), (StepIds{1, 0, {{0, 1}, {2, 3}}}));
  EXPECT_EQ(IdsOf(steps[3]), (StepIds{1, 1, {{4, 5}, {6}}}));
  EXPECT_EQ(steps[1].replicas[1].offsets.size(), 2u);
}

// DATA sharding: every pipeline reads every file and keeps its records;
// together they see each record once.
TEST(FileInputPipelineTest, DataShardingKeepsEveryNthRecord) {
  std::shared_ptr<FakeFormat> format = MakeFiles({7, 4});
  std::vector<int64_t> all;
  for (int p = 0; p < 3; ++p) {
    absl::StatusOr<InputShard> shard =
        ShardInput({"f0", "f1"}, InputContext{3, p, 1}, AutoShardPolicy::kData);
    ASSERT_TRUE(shard.ok());
    std::vector<int64_t> ids =
        AllIds(Drain(*MustCreate(*shard, format, MakeOptions(2, 1, 1))));
    for (int64_t id : ids) {
      const int64_t index = id < 7 ? id : id - 7;
      EXPECT_EQ(index % 3, p) << id;
    }
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_THAT(all, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
}

std::vector<StepIds> ShuffledRun(int parse_threads, int prefetch,
                                 int64_t buffer, uint64_t seed) {
  std::shared_ptr<FakeFormat> format = MakeFiles({30, 17, 25, 1, 40});
  InputPipeline::Options options = MakeOptions(3, 2, 3);
  options.shuffle = true;
  options.shuffle_buffer = buffer;
  options.seed = seed;
  options.cycle_length = 3;
  options.block_length = 2;
  options.parse_threads = parse_threads;
  options.prefetch = prefetch;
  options.records_per_parse_chunk = 5;
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(WholeShard(*format), format, options);
  std::vector<StepIds> steps;
  if (pipeline == nullptr) return steps;
  for (const InputStep& step : Drain(*pipeline)) steps.push_back(IdsOf(step));
  return steps;
}

TEST(FileInputPipelineTest, StepsDoNotDependOnThreadsOrPrefetch) {
  const std::vector<StepIds> expected = ShuffledRun(1, 0, 20, 5);
  ASSERT_EQ(expected.size(), 3u * 19u);  // 113 records, 6 a step
  for (int threads : {1, 2, 4}) {
    for (int prefetch : {0, 2}) {
      EXPECT_TRUE(ShuffledRun(threads, prefetch, 20, 5) == expected)
          << threads << " parse threads, prefetch " << prefetch;
    }
  }
  // What does change the order.
  EXPECT_FALSE(ShuffledRun(2, 2, 20, 6) == expected);
  EXPECT_FALSE(ShuffledRun(2, 2, 21, 5) == expected);
}

TEST(FileInputPipelineTest, ShuffleBufferShufflesEachEpochAnew) {
  const std::vector<StepIds> steps = ShuffledRun(2, 2, 200, 5);
  std::map<int64_t, std::vector<int64_t>> epochs;
  for (const StepIds& step : steps) {
    for (const auto& ids : step.ids) {
      epochs[step.epoch].insert(epochs[step.epoch].end(), ids.begin(),
                                ids.end());
    }
  }
  ASSERT_EQ(epochs.size(), 3u);
  for (auto& [epoch, ids] : epochs) {
    std::vector<int64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), 113u);
    for (int64_t i = 0; i < 113; ++i) ASSERT_EQ(sorted[i], i);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
}

// The pipeline never holds the data set: what was read stays within the
// documented bound of what the steps took.
TEST(FileInputPipelineTest, ReadsNoMoreThanTheBoundAhead) {
  std::shared_ptr<FakeFormat> format =
      MakeFiles(std::vector<int>(20, 1000));  // 20,000 records
  for (bool shuffle : {false, true}) {
    format->records_read = 0;
    InputPipeline::Options options = MakeOptions(4, 2, 1);
    options.shuffle = shuffle;
    options.shuffle_buffer = 300;
    options.prefetch = 2;
    options.parse_threads = 2;
    options.records_per_parse_chunk = 16;
    std::unique_ptr<InputPipeline> pipeline =
        MustCreate(WholeShard(*format), format, options);
    ASSERT_NE(pipeline, nullptr);
    const int64_t bound = pipeline->read_ahead_bound();
    EXPECT_EQ(bound, (shuffle ? 300 : 0) + 3 * 8 + 6 * 16);
    int64_t consumed = 0;
    for (int i = 0; i < 200; ++i) {
      absl::StatusOr<InputStep> step = pipeline->Next();
      ASSERT_TRUE(step.ok()) << step.status();
      consumed += step->num_examples();
      ASSERT_LE(format->records_read.load(), consumed + bound)
          << "after " << i + 1 << " steps";
    }
    EXPECT_LT(format->records_read.load(), 20000);
  }
}

// Resume: stop after k steps, continue from step k's position in a new
// pipeline, and count per epoch how often each id was seen.
struct ResumeCase {
  bool shuffle;
  int64_t buffer;
};

std::map<int64_t, std::map<int64_t, int>> CountsPerEpoch(
    const std::vector<InputStep>& steps) {
  std::map<int64_t, std::map<int64_t, int>> counts;
  for (const InputStep& step : steps) {
    for (const Batch& batch : step.replicas) {
      for (int64_t id : batch.ids) ++counts[step.epoch][id];
    }
  }
  return counts;
}

TEST(FileInputPipelineTest, ResumesWithinTheDocumentedBound) {
  std::shared_ptr<FakeFormat> format = MakeFiles({23, 9, 31, 14});  // 77
  constexpr int kRecords = 77;
  constexpr int kEpochs = 3;
  for (const ResumeCase& c : {ResumeCase{false, 0}, ResumeCase{true, 10}}) {
    InputPipeline::Options options = MakeOptions(2, 2, kEpochs);
    options.shuffle = c.shuffle;
    options.shuffle_buffer = c.buffer;
    options.seed = 11;
    options.cycle_length = 3;
    options.block_length = 2;
    options.records_per_parse_chunk = 4;
    const std::vector<InputStep> full =
        Drain(*MustCreate(WholeShard(*format), format, options));
    ASSERT_EQ(full.size(), static_cast<size_t>(kEpochs * 20));  // 19 + short
    for (int k : {1, 5, 19, 20, 21, 33, 59}) {
      SCOPED_TRACE(
          absl::StrCat("shuffle ", c.shuffle, ", resumed after ", k, " steps"));
      std::unique_ptr<InputPipeline> first =
          MustCreate(WholeShard(*format), format, options);
      ASSERT_NE(first, nullptr);
      std::vector<InputStep> steps;
      for (int i = 0; i < k; ++i) {
        absl::StatusOr<InputStep> step = first->Next();
        ASSERT_TRUE(step.ok()) << step.status();
        steps.push_back(*std::move(step));
      }
      first.reset();
      // Through its serialised form, as a checkpoint keeps it.
      absl::StatusOr<InputPosition> position =
          InputPosition::Parse(steps.back().position.Serialize());
      ASSERT_TRUE(position.ok()) << position.status();
      std::unique_ptr<InputPipeline> second =
          MustCreate(WholeShard(*format), format, options, &*position);
      ASSERT_NE(second, nullptr);
      std::vector<InputStep> rest = Drain(*second);
      if (!c.shuffle) {
        // Exact: the same steps, numbered the same.
        ASSERT_EQ(rest.size(), full.size() - k);
        for (size_t i = 0; i < rest.size(); ++i) {
          ASSERT_TRUE(IdsOf(rest[i]) == IdsOf(full[k + i])) << "step " << i;
        }
        continue;
      }
      // Numbering continues where the first run stopped.
      if (!rest.empty()) {
        const InputStep& last = steps.back();
        const InputStep& next = rest.front();
        EXPECT_TRUE((next.epoch == last.epoch &&
                     next.step_in_epoch == last.step_in_epoch + 1) ||
                    (next.epoch == last.epoch + 1 && next.step_in_epoch == 0))
            << next.epoch << "/" << next.step_in_epoch << " after "
            << last.epoch << "/" << last.step_in_epoch;
      }
      steps.insert(steps.end(), rest.begin(), rest.end());
      std::map<int64_t, std::map<int64_t, int>> counts = CountsPerEpoch(steps);
      const int64_t resumed_epoch = full[k - 1].epoch;
      for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
        int missing = 0;
        for (int id = 0; id < kRecords; ++id) {
          const int seen = counts[epoch][id];
          EXPECT_LE(seen, 1) << "id " << id << " repeated in epoch " << epoch;
          if (seen == 0) ++missing;
        }
        // Only the buffer's content at the snapshot is lost, and only in
        // the epoch the snapshot was taken in.
        if (epoch == resumed_epoch) {
          EXPECT_LT(missing, c.buffer) << "epoch " << epoch;
        } else {
          EXPECT_EQ(missing, 0) << "epoch " << epoch;
        }
      }
    }
  }
}

TEST(FileInputPipelineTest, ResumingOtherInputIsRefused) {
  std::shared_ptr<FakeFormat> format = MakeFiles({5, 5, 5});
  InputPipeline::Options options = MakeOptions(2, 1, 1);
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(WholeShard(*format), format, options);
  absl::StatusOr<InputStep> step = pipeline->Next();
  ASSERT_TRUE(step.ok());
  options.cycle_length = 2;
  absl::Status status = InputPipeline::Create(WholeShard(*format), format,
                                              options, &step->position)
                            .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "the input position is of another input: cycle_length 3 in the "
            "position, 2 here");
  InputShard fewer = WholeShard(*format);
  fewer.files.pop_back();
  options.cycle_length = 3;
  status =
      InputPipeline::Create(fewer, format, options, &step->position).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("files 3 in the position, 2 here"));
}

TEST(FileInputPipelineTest, FirstBadRecordFailsAfterTheStepsBefore) {
  std::shared_ptr<FakeFormat> format = MakeFiles({6});
  format->files["f0"][4] = "bad";
  InputPipeline::Options options = MakeOptions(2, 1, 1);
  for (int prefetch : {0, 2}) {
    options.prefetch = prefetch;
    absl::Status end;
    std::vector<InputStep> steps =
        Drain(*MustCreate(WholeShard(*format), format, options), &end);
    EXPECT_EQ(steps.size(), 2u);
    EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(end.message(), "f0: record 4 at byte 40: \"bad\" is not id,x");
  }
}

TEST(FileInputPipelineTest, SkipsBadRecordsAndDamagedFiles) {
  std::shared_ptr<FakeFormat> format = MakeFiles({10, 10, 10});
  format->files["f0"][3] = "bad";
  format->files["f1"][5] = "damaged";  // the rest of f1 is lost
  format->files["f2"][0] = "7,-1";     // two dense features: does not fit
  InputPipeline::Options options = MakeOptions(4, 1, 2);
  options.input_errors = InputErrorPolicy::kSkip;
  options.max_bad_fraction = 0.5;
  std::vector<std::string> log;
  options.log = [&log](absl::string_view line) { log.emplace_back(line); };
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(WholeShard(*format), format, options);
  std::vector<int64_t> ids = AllIds(Drain(*pipeline));
  std::sort(ids.begin(), ids.end());
  std::vector<int64_t> expected;
  for (int64_t id = 0; id < 30; ++id) {
    if (id == 3 || (id >= 15 && id < 20) || id == 20) continue;
    expected.push_back(id);
    expected.push_back(id);  // two epochs
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(pipeline->records_skipped(), 6);  // 3 a epoch
  // One line per bad record or damaged file, and one per epoch's end.
  EXPECT_EQ(log.size(), 8u);
  EXPECT_THAT(log, testing::Contains(HasSubstr(
                       "input: epoch 2 ended after 6 steps; this pipeline "
                       "gave 23 examples of it")));
  EXPECT_THAT(log, testing::Contains(HasSubstr(
                       "skipping the rest of a damaged file: f1: record 5: "
                       "bad checksum")));
  EXPECT_THAT(log, testing::Contains(HasSubstr(
                       "f2: record 0 at byte 0: 2 dense features where the "
                       "first example had 1")));
}

TEST(FileInputPipelineTest, TooManyBadRecordsFail) {
  std::shared_ptr<FakeFormat> format = MakeFiles({100});
  for (int r = 0; r < 100; r += 10) format->files["f0"][r] = "bad";
  InputPipeline::Options options = MakeOptions(5, 1, 1);
  options.input_errors = InputErrorPolicy::kSkip;
  options.max_bad_fraction = 0.05;
  options.min_records_for_fraction = 30;
  absl::Status end;
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(WholeShard(*format), format, options);
  Drain(*pipeline, &end);
  EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(end.message(),
            "skipped 3 bad records of 30 read (10%), more than "
            "max_bad_fraction 5%; the last: f0: record 20 at byte 200: "
            "\"bad\" is not id,x");

  // A small input is judged at the end of its epoch.
  options.min_records_for_fraction = 1000;
  pipeline = MustCreate(WholeShard(*format), format, options);
  Drain(*pipeline, &end);
  EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(end.message(), HasSubstr("skipped 10 bad records of 100"));
}

TEST(FileInputPipelineTest, NothingToRepeatForeverIsAnError) {
  std::shared_ptr<FakeFormat> format = MakeFiles({0, 0});
  InputPipeline::Options options = MakeOptions(2, 1, 0);
  absl::Status end;
  Drain(*MustCreate(WholeShard(*format), format, options), &end);
  EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(end.message(),
            "the input has no records to repeat forever (num_epochs 0): 2 "
            "files");
  // A few epochs of nothing just end.
  options.num_epochs = 3;
  Drain(*MustCreate(WholeShard(*format), format, options), &end);
  EXPECT_EQ(end.code(), absl::StatusCode::kOutOfRange);
}

TEST(FileInputPipelineTest, MissingFileIsAnErrorAfterTheStepsBefore) {
  std::shared_ptr<FakeFormat> format = MakeFiles({4});
  InputShard shard = WholeShard(*format);
  shard.files.push_back("missing");
  InputPipeline::Options options = MakeOptions(2, 1, 1);
  options.cycle_length = 1;
  absl::Status end;
  std::vector<InputStep> steps =
      Drain(*MustCreate(shard, format, options), &end);
  EXPECT_EQ(steps.size(), 2u);
  EXPECT_EQ(end.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(end.message(), "missing: no such file");
}

TEST(FileInputPipelineTest, DestroyingMidStreamReturnsPromptly) {
  std::shared_ptr<FakeFormat> format = MakeFiles(std::vector<int>(8, 500));
  for (int i = 0; i < 20; ++i) {
    InputPipeline::Options options = MakeOptions(3, 1, 0);
    options.prefetch = i % 3;
    options.parse_threads = 1 + i % 4;
    options.records_per_parse_chunk = 1 + i;
    options.shuffle = i % 2 == 0;
    std::unique_ptr<InputPipeline> pipeline =
        MustCreate(WholeShard(*format), format, options);
    ASSERT_NE(pipeline, nullptr);
    for (int s = 0; s < i % 5; ++s) ASSERT_TRUE(pipeline->Next().ok());
    pipeline.reset();
  }
}

TEST(FileInputPipelineTest, BadOptionsAreNamed) {
  std::shared_ptr<FakeFormat> format = MakeFiles({4});
  InputPipeline::Options options;
  options.parse_threads = 0;
  EXPECT_EQ(InputPipeline::Create(WholeShard(*format), format, options)
                .status()
                .message(),
            "parse_threads must be at least 1, not 0");
  options = InputPipeline::Options();
  options.max_bad_fraction = 2;
  EXPECT_EQ(InputPipeline::Create(WholeShard(*format), format, options)
                .status()
                .message(),
            "max_bad_fraction must be in [0, 1], not 2");
  EXPECT_EQ(InputPipeline::Create(WholeShard(*format), nullptr,
                                  InputPipeline::Options())
                .status()
                .message(),
            "no record format to read the files in");
}

}  // namespace
}  // namespace distrt
