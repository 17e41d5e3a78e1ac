// `distctl export` on a real job: launch trains the built-in wide & deep
// model on 2 ps tasks (its wide weights partitioned over both, its
// embedding a hash table spread over both) with an evaluator; distctl
// exports the final checkpoint; the numpy reader of examples/export
// predicts the eval data from the export alone. Its predictions must be
// the runtime's: per example, against the evaluator's own machinery (the
// model the flags build, one in-memory ps task restoring the checkpoint,
// EvaluateStep), and over the whole file, against the eval loss that the
// job's evaluator task reported. Then what distctl says for checkpoints
// that are missing, uncommitted or damaged.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/distribute/distributed_dataset.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"
#include "runtime/input/input_context.h"
#include "runtime/training/model_variables.h"
#include "runtime/training/train_step.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/launch_jobs.h"
#include "tests/util/subprocess.h"
#include "worker/job_model.h"
#include "worker/worker_options.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kDistctl[] = "client/distctl";
constexpr char kReader[] = "examples/export/read_export.py";
// Enough feature rows (4 bytes each, plus Adagrad's) that the wide weights
// are partitioned over both ps tasks (256 KiB a part at least); the data
// uses the first 40, so that every eval id was trained and is in the
// embedding table (an id it lacks would get a fresh random row in the
// evaluator, zeros from the reader).
constexpr int64_t kNumFeatures = 140000;
// Relative agreement of predictions and losses: the runtime computes in
// float32, the reader in float64.
constexpr double kTolerance = 1e-5;

WorkerOptions JobOptions(const std::string& data_dir) {
  WorkerOptions options;
  options.model = "wide_deep";
  options.train_data = data_dir + "/d.train.svm";
  options.eval_data = data_dir + "/d.eval.svm";
  options.num_features = kNumFeatures;
  options.embedding_dim = 4;
  options.hidden_units = "8,4";
  options.optimizer = "adagrad";
  options.learning_rate = 0.1;
  options.train_steps = 200;
  options.global_batch_size = 64;
  options.devices = "cpu";
  return options;
}

std::vector<std::string> JobFlags(const WorkerOptions& o) {
  return {"--model=" + o.model,
          "--train_data=" + o.train_data,
          "--eval_data=" + o.eval_data,
          absl::StrCat("--num_features=", o.num_features),
          absl::StrCat("--embedding_dim=", o.embedding_dim),
          "--hidden_units=" + o.hidden_units,
          "--optimizer=" + o.optimizer,
          absl::StrCat("--learning_rate=", o.learning_rate),
          absl::StrCat("--train_steps=", o.train_steps),
          absl::StrCat("--global_batch_size=", o.global_batch_size),
          "--devices=cpu",
          "--checkpoint_every_steps=100",
          "--log_every_secs=2",
          "--wait_secs=120"};
}

SubprocessResult RunCommand(std::vector<std::string> argv) {
  SubprocessOptions options;
  options.argv = std::move(argv);
  options.timeout = absl::Seconds(60);
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SubprocessResult{};
}

SubprocessResult Export(const std::string& checkpoint, const std::string& out,
                        std::vector<std::string> more = {}) {
  std::vector<std::string> argv = {
      kDistctl, "export", "--checkpoint=" + checkpoint, "--out=" + out};
  argv.insert(argv.end(), more.begin(), more.end());
  return RunCommand(argv);
}

// The runtime's predictions of every example of `options.eval_data`, as
// the evaluator task makes them (worker/evaluator_job.cc): the model the
// flags build, its variables on one in-memory ps task that restores
// `checkpoint`, one EvaluateStep per batch of the file in order.
std::vector<float> RuntimePredictions(const WorkerOptions& options,
                                      const std::string& checkpoint) {
  absl::StatusOr<JobModel> built = BuildJobModel(options);
  EXPECT_TRUE(built.ok()) << built.status();
  if (!built.ok()) return {};
  absl::StatusOr<std::unique_ptr<InMemoryParameterServers>> servers =
      InMemoryParameterServers::Create(1);
  absl::StatusOr<LocalDevices> devices = CreateTaskDevices(options);
  EXPECT_TRUE(servers.ok() && devices.ok());
  if (!servers.ok() || !devices.ok()) return {};
  absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> strategy =
      ParameterServerStrategy::Create(devices->pointers(), servers->get());
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  if (!strategy.ok()) return {};
  EXPECT_TRUE((*strategy)->Initialize().ok());
  absl::StatusOr<ModelVariables> variables =
      ModelVariables::Create(**strategy, *built->model);
  EXPECT_TRUE(variables.ok()) << variables.status();
  absl::StatusOr<CheckpointRestored> restored = (*servers)->Restore(checkpoint);
  EXPECT_TRUE(restored.ok()) << restored.status();
  if (!variables.ok() || !restored.ok()) return {};

  InputContext context;
  context.num_replicas_in_sync = (*strategy)->num_local_replicas();
  DistributeFilesOptions input;
  input.auto_shard = AutoShardPolicy::kOff;
  input.pipeline.num_epochs = 1;
  input.pipeline.shuffle = false;
  input.pipeline.cycle_length = 1;
  absl::StatusOr<std::unique_ptr<InputPipeline>> pipeline = DistributeFileShard(
      context, (*strategy)->num_local_replicas(), {options.eval_data},
      built->records, options.global_batch_size, input);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  if (!pipeline.ok()) return {};
  std::vector<float> predictions;
  while (true) {
    absl::StatusOr<InputStep> step = (*pipeline)->Next();
    if (absl::IsOutOfRange(step.status())) break;
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    absl::StatusOr<StepResult> result =
        EvaluateStep(**strategy, *built->model, *variables, step->replicas);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) break;
    for (const std::vector<float>& replica : result->predictions) {
      predictions.insert(predictions.end(), replica.begin(), replica.end());
    }
  }
  EXPECT_TRUE((*strategy)->Finalize().ok());
  return predictions;
}

bool Near(double a, double b) {
  return std::abs(a - b) <= kTolerance * std::max(std::abs(a), std::abs(b));
}

// One job for every test: trained once, its directory kept until the end.
class ExportServingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TestDir();
    GenerateData(dir_->path() + "/data", "d",
                 {"--task=binary", "--rows=3000", "--features=40",
                  "--features_per_row=6"});
    const std::string job_dir = dir_->path() + "/job";
    absl::StatusOr<SubprocessResult> job = RunSubprocess(
        LaunchProcess({"--ps=2", "--workers=1", "--chief", "--evaluator",
                       "--job_dir=" + job_dir},
                      JobFlags(JobOptions(dir_->path() + "/data"))));
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_EQ(job->exit_code, 0) << job->stdout_text << job->stderr_text;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string Path(const std::string& name) {
    return dir_->path() + "/" + name;
  }

  static TestDir* dir_;
};

TestDir* ExportServingTest::dir_ = nullptr;

TEST_F(ExportServingTest, ReaderPredictsAsTheEvaluatorFromTheExportAlone) {
  const WorkerOptions options = JobOptions(Path("data"));
  const std::string checkpoints = Path("job/checkpoints");
  const SubprocessResult exported = Export(checkpoints, Path("export"));
  ASSERT_EQ(exported.exit_code, 0) << exported.stderr_text;
  // A line per table and variable; the wide weights put together from the
  // parts of both ps tasks, the embedding merged from both.
  EXPECT_THAT(exported.stdout_text,
              HasSubstr("table wide_deep/embedding: 40 rows of dim 4 from 2 "
                        "shard file(s)"));
  EXPECT_THAT(
      exported.stdout_text,
      HasSubstr(absl::StrCat("variable wide_deep/wide/weights: "
                             "float32 [",
                             kNumFeatures, ", 1] from 2 shard file(s)")));
  EXPECT_THAT(exported.stdout_text,
              HasSubstr("variable wide_deep/logit/kernel: float32 [4, 1]"));
  EXPECT_THAT(exported.stdout_text, HasSubstr("exported step "));

  const SubprocessResult read =
      RunCommand({"/usr/bin/python3", kReader, Path("export"),
                  "--libsvm=" + options.eval_data, "--json"});
  ASSERT_EQ(read.exit_code, 0) << read.stderr_text;
  const nlohmann::json served = nlohmann::json::parse(read.stdout_text);
  EXPECT_EQ(served["unknown_ids"], 0);
  const std::vector<double> predictions = served["predictions"];
  ASSERT_EQ(predictions.size(), 600u);

  // The job's evaluator evaluated the final checkpoint, which was exported.
  const nlohmann::json evaluator = ReadJson(Path("job/metrics.evaluator.json"));
  ASSERT_TRUE(evaluator["eval_loss"].is_number()) << evaluator.dump();
  EXPECT_EQ(served["step"], evaluator["global_step"]);
  EXPECT_TRUE(Near(served["mean_log_loss"].get<double>(),
                   evaluator["eval_loss"].get<double>()))
      << served["mean_log_loss"] << " vs the evaluator's "
      << evaluator["eval_loss"];

  absl::StatusOr<std::vector<std::string>> index =
      ReadCheckpointIndex(checkpoints);
  ASSERT_TRUE(index.ok() && !index->empty()) << index.status();
  const std::vector<float> runtime =
      RuntimePredictions(options, JoinPath(checkpoints, index->back()));
  ASSERT_EQ(runtime.size(), predictions.size());
  int differ = 0;
  for (size_t i = 0; i < runtime.size(); ++i) {
    if (!Near(predictions[i], runtime[i]) && ++differ <= 5) {
      ADD_FAILURE() << "example " << i << ": the reader predicts "
                    << predictions[i] << ", the runtime " << runtime[i];
    }
  }
  EXPECT_EQ(differ, 0);
  // Not all alike: the comparison above could fail.
  EXPECT_NE(predictions.front(), predictions.back());
}

TEST_F(ExportServingTest, RefusesMissingUncommittedAndDamagedCheckpoints) {
  // No flags: bad input.
  EXPECT_EQ(RunCommand({kDistctl, "export"}).exit_code, 2);

  const SubprocessResult missing = Export(Path("nowhere"), Path("out1"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(
      missing.stderr_text,
      HasSubstr("checkpoint directory " + Path("nowhere") + " does not exist"));

  // A copy of the final checkpoint under a root that never committed it.
  absl::StatusOr<std::vector<std::string>> index =
      ReadCheckpointIndex(Path("job/checkpoints"));
  ASSERT_TRUE(index.ok() && !index->empty()) << index.status();
  const std::string from = JoinPath(Path("job/checkpoints"), index->back());
  const std::string copy = JoinPath(Path("copy"), index->back());
  ASSERT_TRUE(CreateDirectories(copy).ok());
  absl::StatusOr<std::vector<std::string>> shards = ListDirectory(from);
  ASSERT_TRUE(shards.ok()) << shards.status();
  for (const std::string& shard : *shards) {
    absl::StatusOr<std::string> bytes = ReadFileToString(JoinPath(from, shard));
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_TRUE(WriteFileAtomically(JoinPath(copy, shard), {*bytes}).ok());
  }
  const SubprocessResult uncommitted = Export(copy, Path("out2"));
  EXPECT_EQ(uncommitted.exit_code, 1);
  EXPECT_THAT(uncommitted.stderr_text,
              HasSubstr("checkpoint " + copy + " is not committed"));
  EXPECT_EQ(Export(copy, Path("out3"), {"--allow_uncommitted"}).exit_code, 0);

  // A byte of the embedding's values in shard 1 flipped.
  const std::string shard = JoinPath(copy, ShardFileName(1, 2));
  std::string bytes = *ReadFileToString(shard);
  {
    absl::StatusOr<std::unique_ptr<ShardFileReader>> reader =
        ShardFileReader::Open(shard);
    ASSERT_TRUE(reader.ok()) << reader.status();
    ASSERT_EQ((*reader)->header().hash_tables_size(), 1);
    const int64_t data_start =
        static_cast<int64_t>(bytes.size()) - (*reader)->data_bytes();
    bytes[data_start + (*reader)->header().hash_tables(0).values().offset()] ^=
        0x01;
  }
  ASSERT_TRUE(WriteFileAtomically(shard, {bytes}).ok());
  const SubprocessResult damaged =
      Export(copy, Path("out4"), {"--allow_uncommitted"});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_THAT(damaged.stderr_text, HasSubstr(shard));
  EXPECT_THAT(damaged.stderr_text,
              HasSubstr("hash embedding table \"wide_deep/embedding\" "
                        "values is corrupt"));
  EXPECT_FALSE(*PathExists(Path("out4")));
}

}  // namespace
}  // namespace distrt::testing
