// TensorFlow users' data trained by real jobs that `launch` starts on
// 127.0.0.1: Criteo-shaped TFRecord shards of tf.Examples (gen_data
// --shape=criteo, with its feature spec) streamed by every task's input
// pipeline. A DLRM module of the user's own (examples/torch/dlrm.py, 26
// tables) reaches a stated AUC under parameter servers, with its tables on
// the ps tasks, and under multi-worker mirrored; the built-in wide_deep
// takes the spec too. Damaged records fail the job naming the file, record
// and byte, or are skipped and counted with --input_errors=skip; and a
// worker killed mid-epoch resumes its input where its steps left it.

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/launch_jobs.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kDlrmModule[] = "examples/torch/dlrm_criteo8.pt";
constexpr absl::Duration kLineTimeout = absl::Minutes(1);

class TfRecordTrainingTest : public ::testing::Test {
 protected:
  // Criteo-shaped data: `shards` TFRecord files of train and of eval
  // rows, ids of a small vocabulary so that a short job learns them.
  void Generate(int64_t rows, int shards,
                const std::vector<std::string>& more = {}) {
    std::vector<std::string> flags = {
        "--shape=criteo",    absl::StrCat("--rows=", rows),
        "--vocab=200",       absl::StrCat("--shards=", shards),
        "--embedding_dim=8", "--eval_fraction=0.2"};
    flags.insert(flags.end(), more.begin(), more.end());
    GenerateData(Data(), "c", flags);
  }
  std::string Data() const { return dir_.path() + "/data"; }
  std::string Spec() const { return Data() + "/c.features.json"; }

  std::vector<std::string> DlrmFlags() const {
    return {"--model=torchscript",
            std::string("--torchscript_file=") + kDlrmModule,
            "--loss=sigmoid_cross_entropy",
            "--features=" + Spec(),
            "--train_data=" + Data() + "/c.train-*",
            "--eval_data=" + Data() + "/c.eval-*",
            "--optimizer=adam",
            "--learning_rate=0.003",
            "--global_batch_size=256",
            "--log_every_secs=2",
            "--wait_secs=120"};
  }

  // Runs launch to its end; its stdout and the job's metrics.json.
  nlohmann::json RunJob(const std::vector<std::string>& launch_flags,
                        const std::vector<std::string>& task_flags,
                        const std::string& job, std::string* out) {
    std::vector<std::string> flags = launch_flags;
    flags.push_back("--job_dir=" + dir_.path() + "/" + job);
    absl::StatusOr<SubprocessResult> result =
        RunSubprocess(LaunchProcess(flags, task_flags));
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return nullptr;
    *out = result->stdout_text + result->stderr_text;
    EXPECT_EQ(result->exit_code, 0) << *out;
    if (result->exit_code != 0) return nullptr;
    return ReadJson(dir_.path() + "/" + job + "/metrics.json");
  }

  TestDir dir_;
};

TEST_F(TfRecordTrainingTest, DlrmTrainsOnParameterServersWithItsTablesThere) {
  Generate(/*rows=*/50000, /*shards=*/4);
  std::vector<std::string> flags = DlrmFlags();
  flags.push_back("--epochs=2");
  std::string out;
  const nlohmann::json metrics =
      RunJob({"--ps=2", "--workers=1", "--chief"}, flags, "ps", &out);
  ASSERT_FALSE(metrics.is_null());
  // The spec's groups are the module's tables, named after them.
  EXPECT_THAT(out, HasSubstr("FILE sharding"));
  EXPECT_THAT(out, HasSubstr("tfrecord"));
  // gen_data's true model reaches 0.78 on this data; 0.743 was seen.
  EXPECT_GT(metrics["eval_auc"].get<double>(), 0.72) << metrics.dump();
}

TEST_F(TfRecordTrainingTest, DlrmTrainsUnderMultiWorkerMirrored) {
  Generate(/*rows=*/50000, /*shards=*/4);
  std::vector<std::string> flags = DlrmFlags();
  flags.push_back("--epochs=2");
  flags.push_back("--strategy=multi_worker_mirrored");
  std::string out;
  const nlohmann::json metrics =
      RunJob({"--ps=0", "--workers=2"}, flags, "mirrored", &out);
  ASSERT_FALSE(metrics.is_null());
  EXPECT_THAT(out, HasSubstr("counting this worker's examples"));
  // 0.744 was seen.
  EXPECT_GT(metrics["eval_auc"].get<double>(), 0.72) << metrics.dump();
}

TEST_F(TfRecordTrainingTest, WideDeepTakesTheSpecOnGzipFiles) {
  Generate(/*rows=*/30000, /*shards=*/3, {"--compression=gzip"});
  std::string out;
  const nlohmann::json metrics = RunJob(
      {"--ps=1", "--workers=1", "--chief"},
      {"--model=wide_deep", "--features=" + Spec(),
       "--train_data=" + Data() + "/c.train-*",
       "--eval_data=" + Data() + "/c.eval-*", "--epochs=2",
       "--global_batch_size=128", "--learning_rate=0.05", "--wait_secs=120"},
      "wide_deep", &out);
  ASSERT_FALSE(metrics.is_null());
  EXPECT_THAT(out, HasSubstr("tfrecord (gzip by name)"));
  EXPECT_GT(metrics["eval_auc"].get<double>(), 0.70) << metrics.dump();
}

// Flips a byte in the middle of the first training shard: a record's data
// no longer matches its CRC.
std::string DamageFirstShard(const std::string& data_dir) {
  const std::string path = data_dir + "/c.train-00000-of-00002.tfrecord";
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(0, std::ios::end);
  const std::streamoff middle = file.tellg() / 2;
  file.seekg(middle);
  char byte = 0;
  file.read(&byte, 1);
  file.seekp(middle);
  byte = static_cast<char>(byte ^ 0x5a);
  file.write(&byte, 1);
  return path;
}

TEST_F(TfRecordTrainingTest, DamagedRecordsFailTheJobOrAreSkipped) {
  Generate(/*rows=*/20000, /*shards=*/2);
  const std::string damaged = DamageFirstShard(Data());
  std::vector<std::string> flags = {"--model=wide_deep",
                                    "--features=" + Spec(),
                                    "--train_data=" + Data() + "/c.train-*",
                                    "--epochs=1",
                                    "--global_batch_size=128",
                                    "--wait_secs=60"};
  std::vector<std::string> launch = {"--ps=1", "--workers=0", "--chief",
                                     "--job_dir=" + dir_.path() + "/fail"};
  absl::StatusOr<SubprocessResult> failed =
      RunSubprocess(LaunchProcess(launch, flags));
  ASSERT_TRUE(failed.ok()) << failed.status();
  const std::string out = failed->stdout_text + failed->stderr_text;
  EXPECT_NE(failed->exit_code, 0) << out;
  EXPECT_THAT(out, HasSubstr(damaged + ": record "));
  EXPECT_THAT(out, HasSubstr(" at byte "));

  flags.push_back("--input_errors=skip");
  std::string skipped_out;
  const nlohmann::json metrics =
      RunJob({"--ps=1", "--workers=0", "--chief"}, flags, "skip", &skipped_out);
  ASSERT_FALSE(metrics.is_null());
  EXPECT_THAT(skipped_out, HasSubstr(damaged));
  EXPECT_THAT(skipped_out, HasSubstr("bad record(s) skipped"));
}

// The number after `key` in `line` ("... gave 1234 examples"); -1 if none.
int64_t NumberAfter(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return -1;
  int64_t value = -1;
  const std::string rest = line.substr(at + key.size());
  if (!absl::SimpleAtoi(rest.substr(0, rest.find_first_not_of("0123456789")),
                        &value)) {
    return -1;
  }
  return value;
}

TEST_F(TfRecordTrainingTest, KilledWorkerResumesItsInputMidEpoch) {
  // One file per training task (FILE sharding), read in order (no
  // shuffle: the resume is then exact), long enough to kill mid-epoch.
  Generate(/*rows=*/150000, /*shards=*/2);
  constexpr int64_t kBatch = 64;
  std::vector<std::string> flags = {
      "--model=wide_deep",
      "--features=" + Spec(),
      "--train_data=" + Data() + "/c.train-*",
      "--epochs=1",
      "--shuffle=false",
      absl::StrCat("--global_batch_size=", kBatch),
      "--checkpoint_every_steps=100",
      "--log_every_secs=0.5",
      "--wait_secs=120"};
  std::vector<std::string> launch_flags = {
      "--ps=1", "--workers=1", "--chief", "--max_restarts=1",
      "--job_dir=" + dir_.path() + "/resume"};
  absl::StatusOr<std::unique_ptr<Subprocess>> launch =
      Subprocess::Start(LaunchProcess(launch_flags, flags));
  ASSERT_TRUE(launch.ok()) << launch.status();
  const int worker = PidOf(ReadUntilLineWith(
      **launch, "launch: started worker:0 at ", kLineTimeout));
  ASSERT_GT(worker, 0);
  // Mid-epoch: after a checkpoint of global step 300 or more (each task's
  // shard has 60000 examples, 938 steps).
  bool saved = false;
  for (int lines = 0; lines < 100 && !saved; ++lines) {
    const std::string line =
        ReadUntilLineWith(**launch, "[chief:0] saved ", kLineTimeout);
    ASSERT_FALSE(line.empty());
    const size_t at = line.find("ckpt-");
    int64_t step = -1;
    saved = at != std::string::npos &&
            absl::SimpleAtoi(line.substr(at + 5, 12), &step) && step >= 300;
  }
  ASSERT_TRUE(saved);
  ASSERT_EQ(kill(worker, SIGKILL), 0);

  absl::StatusOr<SubprocessResult> result = (*launch)->Wait(absl::Minutes(3));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out;
  ASSERT_THAT(out, HasSubstr("launch: restarted worker:0"));
  // The restarted worker resumed mid-epoch, not at its start...
  std::string resumed, ended;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!absl::StartsWith(line, "[worker:0]")) continue;
    if (absl::StrContains(line, "input: resuming in epoch 1 at step ")) {
      resumed = std::string(line);
    }
    if (absl::StrContains(line, "input: epoch 1 ended after ")) {
      ended = std::string(line);
    }
  }
  ASSERT_FALSE(resumed.empty()) << out;
  ASSERT_FALSE(ended.empty()) << out;
  const int64_t resumed_at_step = NumberAfter(resumed, "at step ");
  EXPECT_GT(resumed_at_step, 1) << resumed;
  // ... and the epoch saw every example of its shard exactly once: the
  // steps before the resume point, and what the restarted pipeline gave.
  const int64_t before = (resumed_at_step - 1) * kBatch;
  const int64_t after = NumberAfter(ended, "this pipeline gave ");
  ASSERT_GE(after, 0) << ended;
  // gen_data writes 120000 training rows in 2 shards of contiguous rows.
  EXPECT_EQ(before + after, 60000) << resumed << "\n" << ended;
}

}  // namespace
}  // namespace distrt::testing
