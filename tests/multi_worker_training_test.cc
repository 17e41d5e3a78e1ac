// Multi-worker mirrored training of real worker processes on 127.0.0.1: no
// ps tasks; the chief serves the rendezvous on its TF_CONFIG port and the
// workers all-reduce over Gloo. Every process is stopped by the test, also
// when it fails (Subprocess kills what is still running).

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "deploy/launcher/free_ports.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kWorkerBinary[] = "worker/worker";
constexpr char kGenData[] = "tools/gen_data/gen_data";

// The global batch, divisible by 1, 2 and 3 workers, and the training rows,
// a multiple of it: worker w of n then reads records w, w + n, ... of the one
// file, and its share of step k's batch is exactly its records among the
// one-process batch k (unshuffled), so every job sees the same batches.
constexpr int kGlobalBatch = 60;
constexpr int kTrainRows = 600;

// gen_data's DIR/d.train.svm cut to its first kTrainRows rows, as `path`.
void WriteTrainingData(const std::string& dir, const std::string& task,
                       const std::string& path) {
  SubprocessOptions options;
  options.argv = {kGenData,        "--out_dir=" + dir,     "--prefix=d",
                  "--seed=3",      "--task=" + task,       "--rows=1000",
                  "--features=20", "--features_per_row=5", "--classes=3"};
  absl::StatusOr<SubprocessResult> generated = RunSubprocess(options);
  ASSERT_TRUE(generated.ok()) << generated.status();
  ASSERT_EQ(generated->exit_code, 0) << generated->stderr_text;
  absl::StatusOr<std::string> text = ReadFileToString(dir + "/d.train.svm");
  ASSERT_TRUE(text.ok()) << text.status();
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  ASSERT_GE(lines.size(), static_cast<size_t>(kTrainRows));
  std::ofstream out(path);
  for (int i = 0; i < kTrainRows; ++i) out << lines[i] << "\n";
}

// TF_CONFIG of task `type`:`index` in a cluster of a chief and `workers`
// workers at `addresses` (chief first), as Kubeflow writes it.
std::string TfConfig(const std::vector<std::string>& addresses,
                     const std::string& type, int index) {
  nlohmann::ordered_json cluster;
  cluster["chief"] = {addresses[0]};
  cluster["worker"] = nlohmann::ordered_json::array();
  for (size_t i = 1; i < addresses.size(); ++i) {
    cluster["worker"].push_back(addresses[i]);
  }
  nlohmann::ordered_json config;
  config["cluster"] = cluster;
  config["task"] = {{"type", type}, {"index", index}};
  config["environment"] = "cloud";
  return config.dump();
}

// The processes of one job: the chief and `workers` workers, each with its
// TF_CONFIG, all with `flags`.
class Job {
 public:
  Job(int workers, const std::vector<std::string>& flags) {
    absl::StatusOr<std::vector<int>> ports =
        launcher::PickFreePorts("127.0.0.1", workers + 1);
    EXPECT_TRUE(ports.ok()) << ports.status();
    if (!ports.ok()) return;
    std::vector<std::string> addresses;
    for (int port : *ports)
      addresses.push_back(absl::StrCat("127.0.0.1:", port));
    for (int task = 0; task <= workers; ++task) {
      SubprocessOptions options;
      options.argv = {kWorkerBinary, "--bind_host=127.0.0.1"};
      options.argv.insert(options.argv.end(), flags.begin(), flags.end());
      options.env["TF_CONFIG"] = task == 0
                                     ? TfConfig(addresses, "chief", 0)
                                     : TfConfig(addresses, "worker", task - 1);
      options.timeout = absl::Minutes(3);
      absl::StatusOr<std::unique_ptr<Subprocess>> process =
          Subprocess::Start(options);
      EXPECT_TRUE(process.ok()) << process.status();
      if (process.ok()) processes_.push_back(*std::move(process));
    }
  }

  // Task 0 is the chief, task i + 1 worker i.
  Subprocess& task(int i) { return *processes_[i]; }
  int size() const { return static_cast<int>(processes_.size()); }

  // Waits for every task; their results in task order.
  std::vector<SubprocessResult> Wait(absl::Duration timeout) {
    std::vector<SubprocessResult> results;
    for (auto& process : processes_) {
      absl::StatusOr<SubprocessResult> result = process->Wait(timeout);
      EXPECT_TRUE(result.ok()) << result.status();
      results.push_back(result.ok() ? *std::move(result) : SubprocessResult());
    }
    return results;
  }

 private:
  std::vector<std::unique_ptr<Subprocess>> processes_;
};

// Every float32 variable of the latest checkpoint in `root` (written as one
// shard by the chief), by name.
std::map<std::string, std::vector<float>> ReadWeights(const std::string& root) {
  std::map<std::string, std::vector<float>> weights;
  absl::StatusOr<std::string> dir = ResolveCheckpointDir(root);
  EXPECT_TRUE(dir.ok()) << dir.status();
  if (!dir.ok()) return weights;
  absl::StatusOr<std::unique_ptr<ShardFileReader>> reader =
      ShardFileReader::Open(*dir + "/" + ShardFileName(0, 1));
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return weights;
  for (const ps::SavedVariable& v : (*reader)->header().variables()) {
    if (v.values().dtype() != ps::FLOAT32) continue;
    absl::StatusOr<std::vector<float>> values = (*reader)->ReadFloat32(
        v.values(), v.values().length() / 4, v.spec().name());
    EXPECT_TRUE(values.ok()) << values.status();
    if (values.ok()) weights[v.spec().name()] = *std::move(values);
  }
  return weights;
}

// Weights a run reached, against the reference's, element by element.
void ExpectSameWeights(const std::map<std::string, std::vector<float>>& got,
                       const std::map<std::string, std::vector<float>>& want,
                       const std::string& run) {
  ASSERT_EQ(got.size(), want.size()) << run;
  for (const auto& [name, values] : want) {
    ASSERT_EQ(got.count(name), 1u) << run << ": no " << name;
    const std::vector<float>& other = got.at(name);
    ASSERT_EQ(other.size(), values.size()) << run << ": " << name;
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_NEAR(other[i], values[i], 1e-4 * (1 + std::abs(values[i])))
          << run << ": " << name << "[" << i << "]";
    }
  }
}

// Runs the worker alone (no TF_CONFIG) with `flags` to completion; a fatal
// test failure naming `what` unless it exits 0.
void RunWorkerAlone(const std::vector<std::string>& flags,
                    const std::string& what) {
  SubprocessOptions options;
  options.argv = {kWorkerBinary};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.env["TF_CONFIG"] = std::nullopt;
  options.timeout = absl::Minutes(2);
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << what << ": " << result.status();
  ASSERT_EQ(result->exit_code, 0) << what << ": " << result->stderr_text;
}

struct SameWeightsCase {
  const char* model;
  const char* data;  // gen_data --task
};

class SameWeightsTest : public ::testing::TestWithParam<SameWeightsCase> {};

// 2 and 3 worker processes (the second with 2 replicas each) end with the
// weights one process reaches on the same global batches.
TEST_P(SameWeightsTest, TwoAndThreeProcessesTrainWhatOneProcessTrains) {
  const SameWeightsCase& c = GetParam();
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  WriteTrainingData(dir.path() + "/gen", c.data, train);
  auto flags = [&](const std::string& name) {
    return std::vector<std::string>{
        "--model=" + std::string(c.model),
        "--train_data=" + train,
        "--train_steps=25",  // 2.5 epochs
        absl::StrCat("--global_batch_size=", kGlobalBatch),
        "--shuffle=false",
        "--optimizer=adagrad",
        "--learning_rate=0.2",
        "--hidden_units=8",
        "--checkpoint_dir=" + dir.path() + "/" + name,
        "--log_every_secs=60",
        "--wait_secs=60",
        "--collective_timeout_secs=60"};
  };

  // One process, alone (no TF_CONFIG): MirroredStrategy, one replica.
  RunWorkerAlone(flags("one"), "one process");
  if (HasFatalFailure()) return;
  const auto want = ReadWeights(dir.path() + "/one");
  ASSERT_FALSE(want.empty());

  for (int workers : {1, 2}) {
    std::vector<std::string> job_flags = flags(absl::StrCat("job", workers));
    if (workers == 2) job_flags.push_back("--num_cpu_replicas=2");
    Job job(workers, job_flags);
    ASSERT_EQ(job.size(), workers + 1);
    std::vector<SubprocessResult> results = job.Wait(absl::Minutes(2));
    for (int t = 0; t < job.size(); ++t) {
      ASSERT_EQ(results[t].exit_code, 0)
          << "task " << t << ": " << results[t].stdout_text
          << results[t].stderr_text;
    }
    EXPECT_THAT(results[0].stdout_text,
                HasSubstr(absl::StrCat("MultiWorkerMirroredStrategy: worker 0 "
                                       "of ",
                                       workers + 1)));
    EXPECT_THAT(results[1].stdout_text,
                HasSubstr("variables received from the chief"));
    ExpectSameWeights(ReadWeights(dir.path() + absl::StrCat("/job", workers)),
                      want, absl::StrCat(workers + 1, " processes"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, SameWeightsTest,
    ::testing::Values(SameWeightsCase{"logreg", "binary"},
                      SameWeightsCase{"mlp", "multiclass"}),
    [](const auto& info) { return std::string(info.param.model); });

// A user's PyTorch module (examples/torch/mlp.py, 20 features, 8 hidden
// units, 3 classes) reaches the same weights on one device, mirrored over 2
// replicas, in central storage over 2 replicas, and multi-worker mirrored
// over 2 processes, on the same global batches.
TEST(TorchScriptStrategiesTest, EveryStrategyReachesTheOneDeviceWeights) {
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  WriteTrainingData(dir.path() + "/gen", "multiclass", train);
  auto flags = [&](const std::string& name) {
    return std::vector<std::string>{
        "--model=torchscript",
        "--torchscript_file=examples/torch/mlp_20x3.pt",
        "--loss=softmax_cross_entropy",
        "--num_features=20",
        "--train_data=" + train,
        "--train_steps=25",  // 2.5 epochs
        absl::StrCat("--global_batch_size=", kGlobalBatch),
        "--shuffle=false",
        "--optimizer=adagrad",
        "--learning_rate=0.2",
        "--checkpoint_dir=" + dir.path() + "/" + name,
        "--log_every_secs=60",
        "--wait_secs=60",
        "--collective_timeout_secs=60"};
  };
  auto alone = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> all = flags(name);
    all.insert(all.end(), extra.begin(), extra.end());
    RunWorkerAlone(all, name);
    return ReadWeights(dir.path() + "/" + name);
  };
  const auto want = alone("one_device", {"--strategy=one_device"});
  ASSERT_EQ(want.size(), 4u);  // hidden and logits, weight and bias
  ExpectSameWeights(
      alone("mirrored", {"--strategy=mirrored", "--num_cpu_replicas=2"}), want,
      "mirrored, 2 replicas");
  ExpectSameWeights(alone("central_storage", {"--strategy=central_storage",
                                              "--num_cpu_replicas=2"}),
                    want, "central storage, 2 replicas");

  Job job(1, flags("multi_worker"));
  ASSERT_EQ(job.size(), 2);
  std::vector<SubprocessResult> results = job.Wait(absl::Minutes(2));
  for (int t = 0; t < job.size(); ++t) {
    ASSERT_EQ(results[t].exit_code, 0)
        << "task " << t << ": " << results[t].stdout_text
        << results[t].stderr_text;
  }
  ExpectSameWeights(ReadWeights(dir.path() + "/multi_worker"), want,
                    "multi-worker mirrored, 2 processes");
}

// A job restarted on the same --checkpoint_dir resumes from the chief's last
// checkpoint: the chief restores it and every worker starts from its step.
TEST(MultiWorkerRestartTest, ARestartedJobResumesFromTheChiefsCheckpoint) {
  TestDir dir;
  const std::string train = dir.path() + "/train.svm";
  WriteTrainingData(dir.path() + "/gen", "binary", train);
  auto flags = [&](int train_steps) {
    return std::vector<std::string>{
        "--model=logreg",
        "--train_data=" + train,
        absl::StrCat("--train_steps=", train_steps),
        absl::StrCat("--global_batch_size=", kGlobalBatch),
        "--checkpoint_dir=" + dir.path() + "/ckpt",
        "--checkpoint_every_steps=5",
        "--log_every_secs=60",
        "--wait_secs=60"};
  };
  {
    Job first(2, flags(12));
    for (const SubprocessResult& r : first.Wait(absl::Minutes(2))) {
      ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
    }
  }
  absl::StatusOr<std::optional<std::string>> final_checkpoint =
      ReadFinalCheckpointMarker(dir.path() + "/ckpt");
  ASSERT_TRUE(final_checkpoint.ok()) << final_checkpoint.status();
  EXPECT_EQ(*final_checkpoint, CheckpointDirName(12));

  Job second(2, flags(20));
  std::vector<SubprocessResult> results = second.Wait(absl::Minutes(2));
  for (const SubprocessResult& r : results) {
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
    EXPECT_THAT(r.stdout_text, HasSubstr("training from global step 12"));
  }
  EXPECT_THAT(results[0].stdout_text,
              HasSubstr(absl::StrCat("restored ", dir.path(), "/ckpt/",
                                     CheckpointDirName(12), " (step 12)")));
  absl::StatusOr<std::vector<std::string>> index =
      ReadCheckpointIndex(dir.path() + "/ckpt");
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_FALSE(index->empty());
  EXPECT_EQ(index->back(), CheckpointDirName(20));
}

class LostWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteTrainingData(dir_.path() + "/gen", "binary",
                      dir_.path() + "/train.svm");
  }
  // Training that outlasts the test unless something stops it.
  std::vector<std::string> Flags() {
    return {"--model=logreg",
            "--train_data=" + dir_.path() + "/train.svm",
            "--train_steps=100000000",
            "--global_batch_size=30",
            "--log_every_secs=60",
            "--wait_secs=60",
            "--collective_timeout_secs=3"};
  }
  // Waits until the chief trains.
  void WaitForTraining(Job& job) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (absl::Now() < deadline) {
      absl::StatusOr<std::string> line =
          job.task(0).ReadStdoutLine(deadline - absl::Now());
      ASSERT_TRUE(line.ok()) << line.status();
      if (absl::StrContains(*line, "training from global step")) return;
    }
    FAIL() << "the chief never started training";
  }
  // The tasks other than `lost` exit non-zero naming it, well within the
  // bound: the collective timeout plus the survivors' report window.
  void ExpectTheOthersNameTheLostTask(Job& job, int lost,
                                      const std::string& lost_name) {
    const absl::Time start = absl::Now();
    for (int t = 0; t < job.size(); ++t) {
      if (t == lost) continue;
      absl::StatusOr<SubprocessResult> result =
          job.task(t).Wait(absl::Seconds(60));
      ASSERT_TRUE(result.ok()) << "task " << t << ": " << result.status();
      EXPECT_EQ(result->exit_code, 1) << result->stderr_text;
      EXPECT_THAT(result->stderr_text, HasSubstr("lost " + lost_name))
          << "task " << t;
    }
    EXPECT_LT(absl::Now() - start, absl::Seconds(40));
  }

  TestDir dir_;
};

TEST_F(LostWorkerTest, AKilledWorkerStopsTheOthersWithAnErrorNamingIt) {
  Job job(2, Flags());
  ASSERT_EQ(job.size(), 3);
  WaitForTraining(job);
  job.task(2).Signal(SIGKILL);
  ExpectTheOthersNameTheLostTask(job, 2, "worker:1");
}

TEST_F(LostWorkerTest, AHungWorkerStopsTheOthersAfterTheCollectiveTimeout) {
  Job job(2, Flags());
  ASSERT_EQ(job.size(), 3);
  WaitForTraining(job);
  job.task(1).Signal(SIGSTOP);
  ExpectTheOthersNameTheLostTask(job, 1, "worker:0");
  job.task(1).Signal(SIGKILL);
}

TEST_F(LostWorkerTest, AKilledChiefStopsTheWorkersNamingIt) {
  Job job(2, Flags());
  ASSERT_EQ(job.size(), 3);
  WaitForTraining(job);
  job.task(0).Signal(SIGKILL);
  const absl::Time start = absl::Now();
  for (int t = 1; t < 3; ++t) {
    absl::StatusOr<SubprocessResult> result =
        job.task(t).Wait(absl::Seconds(60));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->exit_code, 1) << result->stderr_text;
    EXPECT_THAT(result->stderr_text, HasSubstr("chief:0"));
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(40));
}

TEST_F(LostWorkerTest, ATaskThatFailsByItselfTellsTheOthersWhy) {
  // Only the chief uses --checkpoint_dir, and this one is a file: it fails
  // after joining the others, who wait for its broadcast.
  const std::string not_a_dir = dir_.path() + "/not_a_dir";
  std::ofstream(not_a_dir) << "x";
  std::vector<std::string> flags = Flags();
  flags.push_back("--checkpoint_dir=" + not_a_dir);
  Job job(2, flags);
  ASSERT_EQ(job.size(), 3);
  std::vector<SubprocessResult> results = job.Wait(absl::Seconds(60));
  EXPECT_EQ(results[0].exit_code, 1) << results[0].stderr_text;
  EXPECT_THAT(results[0].stderr_text, HasSubstr(not_a_dir));
  for (int t = 1; t < 3; ++t) {
    EXPECT_EQ(results[t].exit_code, 1) << results[t].stderr_text;
    EXPECT_THAT(results[t].stderr_text, HasSubstr("chief:0 failed: "));
    EXPECT_THAT(results[t].stderr_text, HasSubstr(not_a_dir));
  }
}

TEST_F(LostWorkerTest, AGlobalBatchThatDoesNotSplitIsRefusedByEveryTask) {
  std::vector<std::string> flags = Flags();
  flags.push_back("--global_batch_size=31");
  Job job(2, flags);
  ASSERT_EQ(job.size(), 3);
  for (const SubprocessResult& r : job.Wait(absl::Seconds(60))) {
    EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
    EXPECT_THAT(r.stderr_text,
                HasSubstr("--global_batch_size=31 does not split evenly over "
                          "3 workers x 1 replicas; use a multiple of 3"));
  }
}

}  // namespace
}  // namespace distrt::testing
