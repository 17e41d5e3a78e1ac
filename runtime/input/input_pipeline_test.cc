#include "runtime/input/input_pipeline.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/input/example.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_files.h"
#include "runtime/input/text_record_format.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Example i has label i, dense features {i, 10 i} and sparse feature i of
// value i, so every part of a batch row says which example it came from.
std::vector<Example> MakeExamples(int n) {
  std::vector<Example> examples(n);
  for (int i = 0; i < n; ++i) {
    examples[i].label = static_cast<float>(i);
    examples[i].dense = {static_cast<float>(i), static_cast<float>(10 * i)};
    examples[i].ids = {i};
    examples[i].values = {static_cast<float>(i)};
  }
  return examples;
}

InputPipeline::Options MakeOptions(int64_t per_replica_batch_size,
                                   int num_replicas, int64_t num_epochs = 1,
                                   int prefetch = 0) {
  InputPipeline::Options options;
  options.per_replica_batch_size = per_replica_batch_size;
  options.num_replicas = num_replicas;
  options.num_epochs = num_epochs;
  options.prefetch = prefetch;
  return options;
}

InputPipeline::Options Shuffled(InputPipeline::Options options, uint64_t seed) {
  options.shuffle = true;
  options.seed = seed;
  return options;
}

std::unique_ptr<InputPipeline> MustCreate(std::vector<Example> examples,
                                          InputPipeline::Options options) {
  absl::StatusOr<std::unique_ptr<InputPipeline>> pipeline =
      InputPipeline::Create(std::move(examples), options);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  return pipeline.ok() ? *std::move(pipeline) : nullptr;
}

std::vector<float> Labels(const Batch& batch) { return batch.labels; }

std::vector<std::vector<float>> ReplicaLabels(const InputStep& step) {
  std::vector<std::vector<float>> labels;
  for (const Batch& batch : step.replicas) labels.push_back(Labels(batch));
  return labels;
}

// Checks that each row of `batch` is that of the example its label names
// (see MakeExamples) and that the batch is consistently shaped.
void ExpectRowsMatchLabels(const Batch& batch) {
  ASSERT_EQ(batch.labels.size(), static_cast<size_t>(batch.size));
  EXPECT_EQ(batch.num_dense, 2);
  ASSERT_EQ(batch.dense.size(), static_cast<size_t>(2 * batch.size));
  ASSERT_EQ(batch.offsets.size(), static_cast<size_t>(batch.size + 1));
  for (int64_t i = 0; i < batch.size; ++i) {
    const float label = batch.labels[i];
    EXPECT_EQ(batch.dense[2 * i], label);
    EXPECT_EQ(batch.dense[2 * i + 1], 10 * label);
    ASSERT_EQ(batch.offsets[i + 1] - batch.offsets[i], 1);
    EXPECT_EQ(batch.ids[batch.offsets[i]], static_cast<int64_t>(label));
    EXPECT_EQ(batch.values[batch.offsets[i]], label);
  }
}

// Every step until the end of the input, which must be OUT_OF_RANGE.
std::vector<InputStep> Drain(InputPipeline& pipeline) {
  std::vector<InputStep> steps;
  while (true) {
    absl::StatusOr<InputStep> step = pipeline.Next();
    if (!step.ok()) {
      EXPECT_EQ(step.status().code(), absl::StatusCode::kOutOfRange)
          << step.status();
      return steps;
    }
    steps.push_back(*std::move(step));
    if (steps.size() > 100000) {
      ADD_FAILURE() << "the input does not end";
      return steps;
    }
  }
}

// The labels of each epoch in the order they were handed out.
std::map<int64_t, std::vector<float>> LabelsByEpoch(
    const std::vector<InputStep>& steps) {
  std::map<int64_t, std::vector<float>> epochs;
  for (const InputStep& step : steps) {
    for (const Batch& batch : step.replicas) {
      std::vector<float>& labels = epochs[step.epoch];
      labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
    }
  }
  return epochs;
}

std::vector<float> Iota(int n) {
  std::vector<float> values(n);
  std::iota(values.begin(), values.end(), 0.0f);
  return values;
}

std::vector<float> Sorted(std::vector<float> values) {
  std::sort(values.begin(), values.end());
  return values;
}

TEST(InputPipelineTest, BadOptionsAreNamed) {
  struct Case {
    std::function<void(InputPipeline::Options&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](auto& o) { o.per_replica_batch_size = 0; },
       "per_replica_batch_size must be at least 1, not 0"},
      {[](auto& o) { o.num_replicas = -2; },
       "num_replicas must be at least 1, not -2"},
      {[](auto& o) {
         o.per_replica_batch_size = int64_t{1} << 61;
         o.num_replicas = 4;
       },
       "per_replica_batch_size 2305843009213693952 times num_replicas 4 is "
       "too large"},
      {[](auto& o) { o.num_epochs = -1; },
       "num_epochs must be positive, or 0 to repeat forever, not -1"},
      {[](auto& o) { o.prefetch = -1; },
       "prefetch must be 0 (no prefetch thread) or more, not -1"},
  };
  for (const Case& c : cases) {
    InputPipeline::Options options;
    c.change(options);
    absl::Status status =
        InputPipeline::Create(MakeExamples(3), options).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.message);
  }
}

TEST(InputPipelineTest, NoExamplesForeverIsAnError) {
  absl::Status status =
      InputPipeline::Create({}, MakeOptions(2, 1, /*num_epochs=*/0)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "no examples to repeat forever (num_epochs 0): Next() would "
            "never return a step");
}

TEST(InputPipelineTest, NoExamplesForSomeEpochsEndsAtOnce) {
  for (int prefetch : {0, 2}) {
    std::unique_ptr<InputPipeline> pipeline =
        MustCreate({}, MakeOptions(2, 2, /*num_epochs=*/3, prefetch));
    ASSERT_NE(pipeline, nullptr);
    EXPECT_EQ(pipeline->steps_per_epoch(), 0);
    absl::Status status = pipeline->Next().status();
    EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(status.message(), "end of input after 3 epochs");
  }
}

TEST(InputPipelineTest, ExamplesThatCannotBeBatchedAreRejectedUpFront) {
  std::vector<Example> examples = MakeExamples(6);
  examples[4].dense.push_back(1);
  absl::Status status =
      InputPipeline::Create(examples, MakeOptions(2, 1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "example 4 has 3 dense features, example 0 has 2");

  examples = MakeExamples(6);
  examples[5].values.clear();
  status = InputPipeline::Create(examples, MakeOptions(2, 1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "example 5 has 1 sparse ids but 0 values");
}

TEST(InputPipelineTest, FullStepsAreContiguousSlicesPerReplica) {
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(MakeExamples(12), MakeOptions(3, 2));
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(pipeline->examples_per_epoch(), 12);
  EXPECT_EQ(pipeline->steps_per_epoch(), 2);
  std::vector<InputStep> steps = Drain(*pipeline);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].epoch, 0);
  EXPECT_EQ(steps[0].step_in_epoch, 0);
  EXPECT_EQ(steps[1].step_in_epoch, 1);
  EXPECT_EQ(steps[0].num_examples(), 6);
  EXPECT_THAT(ReplicaLabels(steps[0]),
              ElementsAre(ElementsAre(0, 1, 2), ElementsAre(3, 4, 5)));
  EXPECT_THAT(ReplicaLabels(steps[1]),
              ElementsAre(ElementsAre(6, 7, 8), ElementsAre(9, 10, 11)));
  for (const InputStep& step : steps) {
    for (const Batch& batch : step.replicas) ExpectRowsMatchLabels(batch);
  }
}

TEST(InputPipelineTest, ShortLastStepIsSplitAsEvenlyAsPossible) {
  struct Case {
    int examples;
    int per_replica;
    int replicas;
    std::vector<int64_t> last_sizes;
    int64_t steps;
  };
  for (const Case& c : std::vector<Case>{{11, 2, 4, {1, 1, 1, 0}, 2},
                                         {13, 3, 2, {1, 0}, 3},
                                         {5, 4, 3, {2, 2, 1}, 1},
                                         {7, 1, 3, {1, 0, 0}, 3},
                                         {9, 3, 1, {3}, 3}}) {
    SCOPED_TRACE(absl::StrCat(c.examples, " examples, ", c.per_replica,
                              " per replica, ", c.replicas, " replicas"));
    std::unique_ptr<InputPipeline> pipeline = MustCreate(
        MakeExamples(c.examples), MakeOptions(c.per_replica, c.replicas));
    ASSERT_NE(pipeline, nullptr);
    EXPECT_EQ(pipeline->steps_per_epoch(), c.steps);
    std::vector<InputStep> steps = Drain(*pipeline);
    ASSERT_EQ(steps.size(), static_cast<size_t>(c.steps));
    std::vector<int64_t> sizes;
    for (const Batch& batch : steps.back().replicas)
      sizes.push_back(batch.size);
    EXPECT_EQ(sizes, c.last_sizes);
    // In order, each example once; empty batches are well formed.
    std::vector<float> seen;
    for (const InputStep& step : steps) {
      ASSERT_EQ(step.replicas.size(), static_cast<size_t>(c.replicas));
      for (const Batch& batch : step.replicas) {
        ExpectRowsMatchLabels(batch);
        seen.insert(seen.end(), batch.labels.begin(), batch.labels.end());
      }
    }
    EXPECT_EQ(seen, Iota(c.examples));
  }
}

TEST(InputPipelineTest, EmptyReplicaBatchKeepsTheDenseWidth) {
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(MakeExamples(1), MakeOptions(1, 2));
  ASSERT_NE(pipeline, nullptr);
  absl::StatusOr<InputStep> step = pipeline->Next();
  ASSERT_TRUE(step.ok()) << step.status();
  const Batch& empty = step->replicas[1];
  EXPECT_EQ(empty.size, 0);
  EXPECT_EQ(empty.num_dense, 2);
  EXPECT_THAT(empty.dense, IsEmpty());
  EXPECT_THAT(empty.offsets, ElementsAre(0));
}

TEST(InputPipelineTest, EpochsRepeatThenEndOfInput) {
  for (int prefetch : {0, 1, 3}) {
    SCOPED_TRACE(absl::StrCat("prefetch ", prefetch));
    std::unique_ptr<InputPipeline> pipeline = MustCreate(
        MakeExamples(5), MakeOptions(2, 1, /*num_epochs=*/3, prefetch));
    ASSERT_NE(pipeline, nullptr);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      for (int64_t s = 0; s < 3; ++s) {
        absl::StatusOr<InputStep> step = pipeline->Next();
        ASSERT_TRUE(step.ok()) << step.status();
        EXPECT_EQ(step->epoch, epoch);
        EXPECT_EQ(step->step_in_epoch, s);
        EXPECT_EQ(step->num_examples(), s < 2 ? 2 : 1);
      }
    }
    // The end comes after every step, and stays.
    for (int i = 0; i < 2; ++i) {
      absl::Status end = pipeline->Next().status();
      EXPECT_EQ(end.code(), absl::StatusCode::kOutOfRange);
      EXPECT_EQ(end.message(), "end of input after 3 epochs");
    }
  }
}

TEST(InputPipelineTest, ZeroEpochsRepeatsForever) {
  for (int prefetch : {0, 2}) {
    std::unique_ptr<InputPipeline> pipeline = MustCreate(
        MakeExamples(3), Shuffled(MakeOptions(2, 1, 0, prefetch), 1));
    ASSERT_NE(pipeline, nullptr);
    for (int64_t i = 0; i < 200; ++i) {
      absl::StatusOr<InputStep> step = pipeline->Next();
      ASSERT_TRUE(step.ok()) << step.status();
      EXPECT_EQ(step->epoch, i / 2);
      EXPECT_EQ(step->step_in_epoch, i % 2);
    }
  }
}

TEST(InputPipelineTest, ShuffleOrderDependsOnSeedAndEpoch) {
  constexpr int kExamples = 40;
  auto epochs_for = [&](uint64_t seed) {
    std::unique_ptr<InputPipeline> pipeline = MustCreate(
        MakeExamples(kExamples), Shuffled(MakeOptions(4, 2, 3), seed));
    EXPECT_NE(pipeline, nullptr);
    if (pipeline == nullptr) return std::map<int64_t, std::vector<float>>();
    std::vector<InputStep> steps = Drain(*pipeline);
    for (const InputStep& step : steps) {
      for (const Batch& batch : step.replicas) ExpectRowsMatchLabels(batch);
    }
    return LabelsByEpoch(steps);
  };
  std::map<int64_t, std::vector<float>> first = epochs_for(7);
  ASSERT_EQ(first.size(), 3u);
  for (const auto& [epoch, labels] : first) {
    EXPECT_EQ(Sorted(labels), Iota(kExamples)) << "epoch " << epoch;
    EXPECT_NE(labels, Iota(kExamples)) << "epoch " << epoch;
  }
  EXPECT_NE(first[0], first[1]);
  EXPECT_NE(first[1], first[2]);
  EXPECT_NE(first[0], first[2]);

  EXPECT_EQ(epochs_for(7), first);
  std::map<int64_t, std::vector<float>> other = epochs_for(8);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    EXPECT_NE(other[epoch], first[epoch]) << "epoch " << epoch;
  }
}

TEST(InputPipelineTest, WithoutShuffleEveryEpochIsInInputOrder) {
  std::unique_ptr<InputPipeline> pipeline =
      MustCreate(MakeExamples(7), MakeOptions(2, 2, 2));
  ASSERT_NE(pipeline, nullptr);
  std::map<int64_t, std::vector<float>> epochs =
      LabelsByEpoch(Drain(*pipeline));
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0], Iota(7));
  EXPECT_EQ(epochs[1], Iota(7));
}

TEST(InputPipelineTest, PrefetchDoesNotChangeTheSteps) {
  auto steps_with = [](int prefetch) {
    std::unique_ptr<InputPipeline> pipeline = MustCreate(
        MakeExamples(23), Shuffled(MakeOptions(2, 3, 3, prefetch), 42));
    EXPECT_NE(pipeline, nullptr);
    std::vector<
        std::pair<std::pair<int64_t, int64_t>, std::vector<std::vector<float>>>>
        steps;
    if (pipeline == nullptr) return steps;
    for (const InputStep& step : Drain(*pipeline)) {
      std::vector<std::vector<float>> rows;
      for (const Batch& batch : step.replicas) {
        rows.push_back(batch.labels);
        rows.push_back(batch.dense);
      }
      steps.push_back({{step.epoch, step.step_in_epoch}, rows});
    }
    return steps;
  };
  const auto expected = steps_with(0);
  EXPECT_EQ(expected.size(), 3u * 4u);
  for (int prefetch : {1, 2, 5, 100}) {
    EXPECT_EQ(steps_with(prefetch), expected) << "prefetch " << prefetch;
  }
}

TEST(InputPipelineTest, DestroyingWithAFullQueueReturnsPromptly) {
  // The prefetch thread is blocked on a full queue, mid-stream, or not yet
  // started; each time the destructor must stop and join it. A hang fails
  // the test by its timeout.
  for (int i = 0; i < 50; ++i) {
    std::unique_ptr<InputPipeline> pipeline = MustCreate(
        MakeExamples(10), Shuffled(MakeOptions(1, 1, 0, 1 + i % 4), i));
    ASSERT_NE(pipeline, nullptr);
    for (int consumed = 0; consumed < i % 3; ++consumed) {
      ASSERT_TRUE(pipeline->Next().ok());
    }
    pipeline.reset();
  }
}

TEST(InputPipelineTest, ConcurrentCallersShareTheStepsExactlyOnce) {
  constexpr int kExamples = 101;
  constexpr int kEpochs = 3;
  for (int prefetch : {0, 2}) {
    std::unique_ptr<InputPipeline> pipeline =
        MustCreate(MakeExamples(kExamples),
                   Shuffled(MakeOptions(2, 2, kEpochs, prefetch), 3));
    ASSERT_NE(pipeline, nullptr);
    std::vector<std::vector<InputStep>> taken(4);
    std::vector<std::thread> callers;
    for (auto& steps : taken) {
      callers.emplace_back([&pipeline, &steps] { steps = Drain(*pipeline); });
    }
    for (std::thread& caller : callers) caller.join();
    std::map<int64_t, std::vector<float>> epochs;
    for (const auto& steps : taken) {
      for (const auto& [epoch, labels] : LabelsByEpoch(steps)) {
        epochs[epoch].insert(epochs[epoch].end(), labels.begin(), labels.end());
      }
    }
    ASSERT_EQ(epochs.size(), static_cast<size_t>(kEpochs));
    for (const auto& [epoch, labels] : epochs) {
      EXPECT_EQ(Sorted(labels), Iota(kExamples)) << "epoch " << epoch;
    }
  }
}

// The whole path of a job's input: files sharded over workers, each
// worker's shard read and fed to its replicas. Every record of the data set
// must reach exactly one replica of one worker in every epoch.
TEST(InputPipelineTest, EveryRecordIsSeenExactlyOncePerEpochAcrossWorkers) {
  for (int num_files : {1, 2, 4}) {
    TestDir dir;
    // File f holds 5 + 3 f records, with a comment and a blank line that
    // hold none; labels number the records of the whole data set.
    std::vector<std::string> files;
    int total = 0;
    for (int f = 0; f < num_files; ++f) {
      std::string contents = "# part of a test data set\n\n";
      for (int r = 0; r < 5 + 3 * f; ++r, ++total) {
        absl::StrAppend(&contents, total, " 1:", r, " 4:0.5\n");
      }
      files.push_back(
          dir.WriteFile(absl::StrCat("part-", f, ".svm"), contents));
    }
    for (int num_workers : {1, 2, 3}) {
      for (int num_replicas : {1, 2, 4}) {
        for (bool shuffle : {false, true}) {
          SCOPED_TRACE(absl::StrCat(num_files, " files, ", num_workers,
                                    " workers, ", num_replicas,
                                    " replicas, shuffle ", shuffle));
          constexpr int kEpochs = 2;
          std::map<int64_t, std::vector<float>> seen;
          for (int worker = 0; worker < num_workers; ++worker) {
            absl::StatusOr<InputShard> shard = ShardInput(
                files, InputContext{num_workers, worker, num_replicas});
            ASSERT_TRUE(shard.ok()) << shard.status();
            absl::StatusOr<std::vector<Example>> examples =
                ReadInputShard(*shard, InputFormatOptions{});
            ASSERT_TRUE(examples.ok()) << examples.status();
            InputPipeline::Options options =
                MakeOptions(2, num_replicas, kEpochs, shuffle ? 2 : 0);
            options.shuffle = shuffle;
            options.seed = 1234;
            std::unique_ptr<InputPipeline> pipeline =
                MustCreate(*std::move(examples), options);
            ASSERT_NE(pipeline, nullptr);
            for (const InputStep& step : Drain(*pipeline)) {
              ASSERT_EQ(step.replicas.size(),
                        static_cast<size_t>(num_replicas));
              std::vector<float>& labels = seen[step.epoch];
              for (const Batch& batch : step.replicas) {
                labels.insert(labels.end(), batch.labels.begin(),
                              batch.labels.end());
              }
            }
          }
          ASSERT_EQ(seen.size(), static_cast<size_t>(kEpochs));
          for (const auto& [epoch, labels] : seen) {
            EXPECT_EQ(Sorted(labels), Iota(total)) << "epoch " << epoch;
          }
        }
      }
    }
  }
}

// The same through the streaming pipeline and a real format: each worker
// reads its shard of LIBSVM files (FILE or DATA sharding) record by
// record, and resumes exactly from a step's position without shuffle.
TEST(InputPipelineTest, StreamedLibsvmFilesAreSeenExactlyOncePerEpoch) {
  absl::StatusOr<std::unique_ptr<LibsvmFormat>> libsvm =
      LibsvmFormat::Create(LibsvmOptions{});
  ASSERT_TRUE(libsvm.ok()) << libsvm.status();
  std::shared_ptr<const RecordFormat> format = *std::move(libsvm);
  for (int num_files : {1, 4}) {
    TestDir dir;
    std::vector<std::string> files;
    int total = 0;
    for (int f = 0; f < num_files; ++f) {
      std::string contents = "# part of a test data set\n\n";
      for (int r = 0; r < 5 + 3 * f; ++r, ++total) {
        absl::StrAppend(&contents, total, " 1:", r, " 4:0.5\n");
      }
      files.push_back(
          dir.WriteFile(absl::StrCat("part-", f, ".svm"), contents));
    }
    for (int num_workers : {1, 2, 3}) {
      for (bool shuffle : {false, true}) {
        SCOPED_TRACE(absl::StrCat(num_files, " files, ", num_workers,
                                  " workers, shuffle ", shuffle));
        constexpr int kEpochs = 2;
        std::map<int64_t, std::vector<float>> seen;
        for (int worker = 0; worker < num_workers; ++worker) {
          absl::StatusOr<InputShard> shard =
              ShardInput(files, InputContext{num_workers, worker, 2});
          ASSERT_TRUE(shard.ok()) << shard.status();
          InputPipeline::Options options = MakeOptions(2, 2, kEpochs, 1);
          options.shuffle = shuffle;
          options.shuffle_buffer = 3;
          options.seed = 1234;
          absl::StatusOr<std::unique_ptr<InputPipeline>> pipeline =
              InputPipeline::Create(*shard, format, options);
          ASSERT_TRUE(pipeline.ok()) << pipeline.status();
          std::vector<InputStep> steps = Drain(**pipeline);
          for (const auto& [epoch, labels] : LabelsByEpoch(steps)) {
            seen[epoch].insert(seen[epoch].end(), labels.begin(), labels.end());
          }
          if (shuffle || steps.size() < 2) continue;
          // Resumed from the first step's position: the same rest.
          absl::StatusOr<std::unique_ptr<InputPipeline>> resumed =
              InputPipeline::Create(*shard, format, options,
                                    &steps[0].position);
          ASSERT_TRUE(resumed.ok()) << resumed.status();
          std::vector<InputStep> rest = Drain(**resumed);
          ASSERT_EQ(rest.size(), steps.size() - 1);
          for (size_t i = 0; i < rest.size(); ++i) {
            EXPECT_EQ(ReplicaLabels(rest[i]), ReplicaLabels(steps[i + 1]));
            EXPECT_EQ(rest[i].epoch, steps[i + 1].epoch);
            EXPECT_EQ(rest[i].step_in_epoch, steps[i + 1].step_in_epoch);
          }
        }
        ASSERT_EQ(seen.size(), static_cast<size_t>(kEpochs));
        for (const auto& [epoch, labels] : seen) {
          EXPECT_EQ(Sorted(labels), Iota(total)) << "epoch " << epoch;
        }
      }
    }
  }
}

}  // namespace
}  // namespace distrt
