// RunTrainingLoop under ParameterServerStrategy with two in-process ps
// tasks: where it stops (train_steps counted from the global step, the end
// of the data, max_steps), when the chief's checkpoints fall due (by steps
// and by time), what reaches the callbacks, and that a failed step's error
// goes through explain_step_failure.

#include "runtime/training/training_loop.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distribute/distributed_dataset.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"
#include "runtime/input/example.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/models/model_config.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kFeatures = 10;
constexpr int kExamples = 64;
constexpr int kGlobalBatch = 8;

// Sparse examples of a separable problem: label 1 for even first ids.
std::vector<Example> Data() {
  std::vector<Example> data(kExamples);
  for (int i = 0; i < kExamples; ++i) {
    data[i].ids = {i % kFeatures, (i * 7 + 3) % kFeatures};
    if (data[i].ids[0] == data[i].ids[1]) data[i].ids.pop_back();
    data[i].values.assign(data[i].ids.size(), 1.0f);
    data[i].label = data[i].ids[0] % 2 == 0 ? 1.0f : 0.0f;
  }
  return data;
}

class TrainingLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalDevicesOptions device_options;
    device_options.num_cpu_devices = 2;
    device_options.use_gpus = false;
    devices_ =
        std::make_unique<LocalDevices>(*CreateLocalDevices(device_options));
    servers_ = *InMemoryParameterServers::Create(2);
    strategy_ =
        *ParameterServerStrategy::Create(devices_->pointers(), servers_.get());
    ASSERT_TRUE(strategy_->Initialize().ok());
    ModelConfig config;
    config.name = "logreg";
    config.num_features = kFeatures;
    config.optimizer.learning_rate = 0.5f;
    model_ = *CreateModel(config);
    variables_.emplace(*ModelVariables::Create(*strategy_, *model_));
  }

  // The data as a dataset of `epochs` epochs (0: forever).
  std::unique_ptr<InputPipeline> Dataset(std::vector<Example> data,
                                         int64_t epochs) {
    DistributeDatasetOptions options;
    options.epochs = epochs;
    return *DistributeDataset(*strategy_, std::move(data), kGlobalBatch,
                              options);
  }

  absl::StatusOr<TrainingLoopResult> Run(InputPipeline& pipeline,
                                         const TrainingLoopOptions& options) {
    return RunTrainingLoop(*strategy_, *model_, *variables_, pipeline, options);
  }

  std::unique_ptr<LocalDevices> devices_;
  std::unique_ptr<InMemoryParameterServers> servers_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<Model> model_;
  std::optional<ModelVariables> variables_;
};

TEST_F(TrainingLoopTest, StopsAtTrainStepsAndCheckpointsEveryNSteps) {
  std::unique_ptr<InputPipeline> data = Dataset(Data(), /*epochs=*/0);
  std::vector<std::string> lines;
  std::vector<int64_t> saved, stepped, progressed;
  std::vector<double> losses;
  TrainingLoopOptions options;
  options.train_steps = 7;
  options.log_every = absl::ZeroDuration();  // a line every step
  options.checkpoint_every_steps = 3;
  options.save_checkpoint = [&](int64_t step) {
    saved.push_back(step);
    return absl::OkStatus();
  };
  options.log = [&](absl::string_view line) { lines.emplace_back(line); };
  options.on_step = [&](const StepResult& step, int64_t global_step) {
    EXPECT_EQ(step.examples, kGlobalBatch);
    losses.push_back(step.mean_loss());
    stepped.push_back(global_step);
  };
  options.on_progress = [&](int64_t global_step, const ProgressMeter& meter,
                            absl::Time) {
    EXPECT_EQ(meter.total_steps(), global_step);
    progressed.push_back(global_step);
    return absl::OkStatus();
  };
  absl::StatusOr<TrainingLoopResult> result = Run(*data, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 7);
  EXPECT_EQ(result->examples, 7 * kGlobalBatch);
  EXPECT_EQ(result->first_global_step, 0);
  EXPECT_EQ(result->global_step, 7);
  EXPECT_EQ(*variables_->ReadGlobalStep(*strategy_), 7);
  EXPECT_THAT(saved, ElementsAre(3, 6));
  EXPECT_THAT(stepped, ElementsAre(1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(progressed, stepped);
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "training from global step 0 on 64 examples");
  EXPECT_THAT(lines[7], HasSubstr("step 7/7: "));
  // A line every step: the "current" loss is the last step's.
  EXPECT_NEAR(result->train_loss, losses.back(), 1e-6);
}

TEST_F(TrainingLoopTest, CountsTrainStepsFromTheGlobalStepItFinds) {
  std::unique_ptr<InputPipeline> data = Dataset(Data(), /*epochs=*/0);
  TrainingLoopOptions options;
  options.train_steps = 4;
  ASSERT_EQ(Run(*data, options)->global_step, 4);
  // A restarted task (or another worker) finds the job's global step.
  options.train_steps = 6;
  absl::StatusOr<TrainingLoopResult> resumed = Run(*data, options);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->first_global_step, 4);
  EXPECT_EQ(resumed->steps, 2);
  EXPECT_EQ(resumed->global_step, 6);
  // Already there: no step at all.
  EXPECT_EQ(Run(*data, options)->steps, 0);
}

// The loop learns the global step from each step's increment, which
// counts the steps other workers made meanwhile (here, 10 after each).
TEST_F(TrainingLoopTest, TheGlobalStepCountsOtherWorkersSteps) {
  std::unique_ptr<InputPipeline> data = Dataset(Data(), /*epochs=*/0);
  TrainingLoopOptions options;
  options.train_steps = 30;
  std::vector<int64_t> stepped;
  options.on_step = [&](const StepResult& step, int64_t global_step) {
    EXPECT_EQ(step.global_step, global_step);
    stepped.push_back(global_step);
    absl::StatusOr<Tensor> ten = Tensor::Create(DType::kInt64, {});
    ASSERT_TRUE(ten.ok());
    ten->flat<int64_t>()[0] = 10;
    ASSERT_TRUE(strategy_->AssignAdd(variables_->global_step(), *ten).ok());
  };
  absl::StatusOr<TrainingLoopResult> result = Run(*data, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(stepped, ElementsAre(1, 12, 23, 34));
  EXPECT_EQ(result->steps, 4);
  EXPECT_EQ(result->global_step, 34);
  EXPECT_EQ(*variables_->ReadGlobalStep(*strategy_), 44);
}

TEST_F(TrainingLoopTest, EndsWithTheDataOrMaxSteps) {
  std::unique_ptr<InputPipeline> one_epoch = Dataset(Data(), /*epochs=*/1);
  absl::StatusOr<TrainingLoopResult> result = Run(*one_epoch, {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, kExamples / kGlobalBatch);

  std::unique_ptr<InputPipeline> forever = Dataset(Data(), /*epochs=*/0);
  TrainingLoopOptions options;
  options.max_steps = 3;
  result = Run(*forever, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 3);
  EXPECT_EQ(result->global_step, kExamples / kGlobalBatch + 3);
}

TEST_F(TrainingLoopTest, CheckpointsByTimeOnItsClock) {
  std::unique_ptr<InputPipeline> data = Dataset(Data(), /*epochs=*/0);
  absl::Time clock = absl::UnixEpoch();
  std::vector<int64_t> saved;
  TrainingLoopOptions options;
  options.train_steps = 10;
  options.checkpoint_every = absl::Seconds(10);
  // Each reading of the clock is 3 s after the one before: the loop reads
  // it at the start and once a step.
  options.now = [&] { return clock += absl::Seconds(3); };
  options.save_checkpoint = [&](int64_t step) {
    saved.push_back(step);
    return absl::OkStatus();
  };
  ASSERT_TRUE(Run(*data, options).ok());
  // Start at 3 s; step n ends at 3 + 3n s: due at 15 s (step 4), then 27 s
  // (step 8).
  EXPECT_THAT(saved, ElementsAre(4, 8));
}

TEST_F(TrainingLoopTest, AFailedStepIsExplained) {
  std::vector<Example> data = Data();
  data[kGlobalBatch * 2].ids = {kFeatures + 40};  // in the third step
  data[kGlobalBatch * 2].values = {1.0f};
  std::unique_ptr<InputPipeline> pipeline = Dataset(std::move(data), 1);
  int steps = 0;
  TrainingLoopOptions options;
  options.on_step = [&](const StepResult&, int64_t) { ++steps; };
  options.explain_step_failure = [](const absl::Status& failure) {
    return absl::UnavailableError(
        absl::StrCat("explained: ", failure.message()));
  };
  absl::StatusOr<TrainingLoopResult> result = Run(*pipeline, options);
  EXPECT_TRUE(absl::IsUnavailable(result.status())) << result.status();
  EXPECT_THAT(result.status().message(),
              HasSubstr("the training step after global step 2 (this task's "
                        "step 3) failed: explained: "));
  EXPECT_THAT(result.status().message(), HasSubstr("50"));
  EXPECT_EQ(steps, 2);
}

TEST_F(TrainingLoopTest, ACheckpointOrProgressErrorEndsTheLoop) {
  std::unique_ptr<InputPipeline> data = Dataset(Data(), /*epochs=*/0);
  TrainingLoopOptions options;
  options.train_steps = 10;
  options.checkpoint_every_steps = 2;
  options.save_checkpoint = [](int64_t step) {
    return absl::PermissionDeniedError(absl::StrCat("cannot save ", step));
  };
  absl::StatusOr<TrainingLoopResult> result = Run(*data, options);
  EXPECT_TRUE(absl::IsPermissionDenied(result.status())) << result.status();
  EXPECT_EQ(result.status().message(), "cannot save 2");

  options.save_checkpoint = nullptr;
  options.log_every = absl::ZeroDuration();
  options.on_progress = [](int64_t, const ProgressMeter&, absl::Time) {
    return absl::DataLossError("summary file");
  };
  result = Run(*data, options);
  EXPECT_TRUE(absl::IsDataLoss(result.status())) << result.status();
  EXPECT_EQ(*variables_->ReadGlobalStep(*strategy_), 3);
}

// With read_ahead the loop takes each step from the pipeline one early and
// hands it to TrainStep to read for: every step after the first computes
// with values read during the one before, and training still learns.
TEST_F(TrainingLoopTest,
       ReadAheadTrainsEveryStepAfterTheFirstOnValuesReadEarly) {
  std::unique_ptr<InputPipeline> data = Dataset(Data(), /*epochs=*/3);
  TrainingLoopOptions options;
  options.read_ahead = true;
  std::vector<double> losses;
  options.on_step = [&](const StepResult& step, int64_t) {
    losses.push_back(step.mean_loss());
  };
  absl::StatusOr<TrainingLoopResult> result = Run(*data, options);
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t steps = 3 * kExamples / kGlobalBatch;
  EXPECT_EQ(result->steps, steps);
  EXPECT_EQ(result->global_step, steps);
  // Two replicas: each takes a read-ahead on every step but the first.
  EXPECT_EQ(result->steps_read_ahead, 2 * (steps - 1));
  EXPECT_EQ(result->reads_ahead_dropped, 0);
  // Stale reads make single steps' losses noisy (an ASan run had the last
  // step's above the first's), so: no step diverges.
  ASSERT_EQ(losses.size(), static_cast<size_t>(steps));
  for (double loss : losses) {
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_LT(loss, 1.0);
  }

  // Stopped by train_steps: the last step reads nothing ahead.
  std::unique_ptr<InputPipeline> more = Dataset(Data(), /*epochs=*/0);
  options.train_steps = steps + 4;
  result = Run(*more, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 4);
  EXPECT_EQ(result->global_step, steps + 4);
  EXPECT_EQ(result->steps_read_ahead, 2 * 3);
  EXPECT_EQ(result->reads_ahead_dropped, 0);
}

// With pushes in the background (StrategyOptions::push_in_background),
// each step's update lands during the next step, and the loop waits for the
// last before it returns: the ps tasks hold every step, the global step
// learnt from the pushes is exact (one worker), training still learns;
// alone or with read-ahead, for a model with hash tables too (whose step
// counts once its table pushes are in: the increment then goes on its own,
// after the step's other updates).
class TrainingLoopBackgroundPushTest : public TrainingLoopTest {
 protected:
  // A fresh job of `model_name` on 2 new in-process ps tasks, in place of
  // SetUp's.
  void StartJob(const std::string& model_name) {
    variables_.reset();
    strategy_.reset();
    servers_ = *InMemoryParameterServers::Create(2);
    StrategyOptions strategy_options;
    strategy_options.push_in_background = true;
    strategy_ = *ParameterServerStrategy::Create(
        devices_->pointers(), servers_.get(), strategy_options);
    ASSERT_TRUE(strategy_->Initialize().ok());
    ModelConfig config;
    config.name = model_name;
    config.num_features = kFeatures;
    config.optimizer.learning_rate = 0.5f;
    model_ = *CreateModel(config);
    variables_.emplace(*ModelVariables::Create(*strategy_, *model_));
  }

  absl::StatusOr<TrainingLoopResult> RunOn(std::vector<Example> data,
                                           const TrainingLoopOptions& options) {
    std::unique_ptr<InputPipeline> pipeline =
        Dataset(std::move(data), /*epochs=*/0);
    return Run(*pipeline, options);
  }
};

TEST_F(TrainingLoopBackgroundPushTest, EveryStepLandsAndTheGlobalStepIsExact) {
  for (const std::string model : {"logreg", "wide_deep"}) {
    for (const bool read_ahead : {false, true}) {
      SCOPED_TRACE(absl::StrCat(model, read_ahead ? " with read-ahead" : ""));
      StartJob(model);
      EXPECT_TRUE(strategy_->updates_in_background());
      TrainingLoopOptions options;
      options.read_ahead = read_ahead;
      options.train_steps = 40;
      std::vector<int64_t> stepped;
      std::vector<double> losses;
      options.on_step = [&](const StepResult& step, int64_t global_step) {
        losses.push_back(step.mean_loss());
        stepped.push_back(global_step);
      };
      absl::StatusOr<TrainingLoopResult> result = RunOn(Data(), options);
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(result->steps, 40);
      EXPECT_EQ(result->global_step, 40);
      ASSERT_EQ(stepped.size(), 40u);
      for (size_t i = 0; i < stepped.size(); ++i) {
        EXPECT_EQ(stepped[i], static_cast<int64_t>(i) + 1);
      }
      // Every push landed: what the ps tasks hold says so.
      EXPECT_EQ(*variables_->ReadGlobalStep(*strategy_), 40);
      // logreg: each step's gradients and increment in one push in the
      // background (the first step's increment alone in the foreground, to
      // learn its value); wide_deep: the gradients, then the increment, on
      // their own after the hash tables' pushes.
      EXPECT_EQ(strategy_->num_background_pushes(),
                model == "logreg" ? 40 : 40 + 39);
      ASSERT_EQ(losses.size(), 40u);
      for (double loss : losses) EXPECT_TRUE(std::isfinite(loss));
      // (wide_deep's embeddings and layers learn this data far slower.)
      if (model == "logreg") {
        EXPECT_LT(losses.back(), losses.front());
      }
      EXPECT_TRUE(strategy_->Finalize().ok());
    }
  }
}

// A step that fails (a feature id outside the model, in the third step)
// while the step before's push is in flight: the loop returns only once
// that push has landed.
TEST_F(TrainingLoopBackgroundPushTest, AFailedStepWaitsForThePushInFlight) {
  StartJob("logreg");
  std::vector<Example> data = Data();
  data[kGlobalBatch * 2].ids = {kFeatures + 40};
  data[kGlobalBatch * 2].values = {1.0f};
  absl::StatusOr<TrainingLoopResult> result = RunOn(std::move(data), {});
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr("the training step after global step 2"));
  EXPECT_EQ(*variables_->ReadGlobalStep(*strategy_), 2);
}

}  // namespace
}  // namespace distrt
