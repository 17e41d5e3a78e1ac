// examples/custom_training_loop, a program on the library's public headers,
// run as real multi-process jobs on 127.0.0.1: with parameter servers (2
// ps_server processes, a chief and a worker) and multi-worker mirrored (a
// chief and a worker). Both must fit the example's line, and the chief
// leaves a final checkpoint that a later run restores.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "deploy/launcher/free_ports.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/ps_processes.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kExample[] =
    "examples/custom_training_loop/custom_training_loop";

// Starts task `type`:`index` of `cluster` running the example.
std::unique_ptr<Subprocess> StartTask(const nlohmann::ordered_json& cluster,
                                      const std::string& type,
                                      const std::string& out) {
  nlohmann::ordered_json tf_config;
  tf_config["cluster"] = cluster;
  tf_config["task"] = {{"type", type}, {"index", 0}};
  SubprocessOptions options;
  options.argv = {kExample, "--steps=200", "--out=" + out,
                  "--checkpoint_dir=" + out + ".ckpt"};
  options.env["TF_CONFIG"] = tf_config.dump();
  options.timeout = absl::Minutes(2);
  absl::StatusOr<std::unique_ptr<Subprocess>> process =
      Subprocess::Start(options);
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

std::vector<float> ReadWeights(const std::string& out);

// Both tasks exit 0; the chief's weights, as it wrote them.
std::vector<float> FinishAndReadWeights(Subprocess& chief, Subprocess& worker,
                                        const std::string& out,
                                        std::string* chief_stdout,
                                        std::string* worker_stdout) {
  absl::StatusOr<SubprocessResult> c = chief.Wait(absl::Minutes(2));
  absl::StatusOr<SubprocessResult> w = worker.Wait(absl::Minutes(2));
  EXPECT_TRUE(c.ok() && w.ok());
  if (!c.ok() || !w.ok()) return {};
  EXPECT_EQ(c->exit_code, 0) << c->stderr_text;
  EXPECT_EQ(w->exit_code, 0) << w->stderr_text;
  *chief_stdout = c->stdout_text;
  *worker_stdout = w->stdout_text;
  return ReadWeights(out);
}

// The weights the chief wrote to `out`.
std::vector<float> ReadWeights(const std::string& out) {
  absl::StatusOr<std::string> text = ReadFileToString(out);
  EXPECT_TRUE(text.ok()) << text.status();
  std::vector<float> weights;
  for (absl::string_view field :
       absl::StrSplit(text.ok() ? *text : "", ' ', absl::SkipWhitespace())) {
    float value = 0;
    EXPECT_TRUE(absl::SimpleAtof(field, &value)) << field;
    weights.push_back(value);
  }
  return weights;
}

void ExpectTheExamplesLine(const std::vector<float>& weights) {
  ASSERT_EQ(weights.size(), 3u);
  EXPECT_NEAR(weights[0], 3.0f, 0.05f);
  EXPECT_NEAR(weights[1], -2.0f, 0.05f);
  EXPECT_NEAR(weights[2], 0.5f, 0.05f);
}

TEST(CustomTrainingLoopTest, TrainsWithParameterServers) {
  TestDir dir;
  absl::StatusOr<std::vector<PsProcess>> ps = StartPsProcesses(2);
  ASSERT_TRUE(ps.ok()) << ps.status();
  nlohmann::ordered_json cluster;
  // Chief and worker serve nothing under parameter servers.
  cluster["chief"] = {"127.0.0.1:1"};
  cluster["ps"] = AddressesOf(*ps);
  cluster["worker"] = {"127.0.0.1:2"};
  const std::string out = dir.path() + "/weights.txt";
  std::unique_ptr<Subprocess> worker = StartTask(cluster, "worker", out);
  std::unique_ptr<Subprocess> chief = StartTask(cluster, "chief", out);
  ASSERT_TRUE(chief && worker);
  std::string chief_stdout, worker_stdout;
  ExpectTheExamplesLine(FinishAndReadWeights(*chief, *worker, out,
                                             &chief_stdout, &worker_stdout));
  EXPECT_THAT(chief_stdout, HasSubstr("ParameterServerStrategy: 2 replicas"));
  EXPECT_THAT(chief_stdout, HasSubstr("chief wrote"));
  EXPECT_THAT(worker_stdout, HasSubstr("worker 1 of 2"));
  EXPECT_THAT(worker_stdout, Not(HasSubstr("chief wrote")));
  // Both workers' 200 steps, in the checkpoint the evaluators would take.
  EXPECT_THAT(chief_stdout,
              HasSubstr("final checkpoint: " + CheckpointDirName(400)));
  EXPECT_THAT(*ReadFinalCheckpointMarker(out + ".ckpt"),
              ::testing::Optional(CheckpointDirName(400)));
}

// Alone (no TF_CONFIG), a second run restores what the first saved: with no
// steps of its own it ends with the first run's weights and global step.
TEST(CustomTrainingLoopTest, ASecondRunRestoresTheCheckpoint) {
  TestDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  std::vector<std::string> outputs;
  for (const char* steps : {"--steps=120", "--steps=0"}) {
    SubprocessOptions options;
    options.argv = {kExample, steps, "--out=" + dir.path() + "/weights.txt",
                    "--checkpoint_dir=" + checkpoints};
    options.timeout = absl::Minutes(1);
    absl::StatusOr<SubprocessResult> run = RunSubprocess(options);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->exit_code, 0) << run->stderr_text;
    outputs.push_back(run->stdout_text);
  }
  EXPECT_THAT(outputs[0], Not(HasSubstr("restored")));
  EXPECT_THAT(outputs[0],
              HasSubstr("final checkpoint: " + CheckpointDirName(120)));
  EXPECT_THAT(outputs[1], HasSubstr("restored "));
  EXPECT_THAT(outputs[1], HasSubstr("(step 120)"));
  EXPECT_THAT(outputs[1],
              HasSubstr("final checkpoint: " + CheckpointDirName(120)));
  const auto weights = [](const std::string& text) {
    const size_t at = text.find("weights ");
    return at == std::string::npos ? text
                                   : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(weights(outputs[1]), weights(outputs[0]));
  ExpectTheExamplesLine(ReadWeights(dir.path() + "/weights.txt"));
}

TEST(CustomTrainingLoopTest, TrainsMultiWorkerMirrored) {
  TestDir dir;
  absl::StatusOr<std::vector<int>> ports =
      launcher::PickFreePorts("127.0.0.1", 2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  nlohmann::ordered_json cluster;
  cluster["chief"] = {absl::StrCat("127.0.0.1:", (*ports)[0])};
  cluster["worker"] = {absl::StrCat("127.0.0.1:", (*ports)[1])};
  const std::string out = dir.path() + "/weights.txt";
  std::unique_ptr<Subprocess> chief = StartTask(cluster, "chief", out);
  std::unique_ptr<Subprocess> worker = StartTask(cluster, "worker", out);
  // Each worker steps its own copy of the global step, in step.
  ASSERT_TRUE(chief && worker);
  std::string chief_stdout, worker_stdout;
  ExpectTheExamplesLine(FinishAndReadWeights(*chief, *worker, out,
                                             &chief_stdout, &worker_stdout));
  // Global replica counts; both workers end with the same weights.
  EXPECT_THAT(chief_stdout, HasSubstr("4 replicas in sync, 16 examples each"));
  // replica_id_in_sync_group is global: the chief's replicas are 0 and 1,
  // the worker's 2 and 3.
  EXPECT_THAT(chief_stdout, HasSubstr("replica ids in sync: 0 1\n"));
  EXPECT_THAT(worker_stdout, HasSubstr("replica ids in sync: 2 3\n"));
  const auto final_line = [](const std::string& text) {
    const size_t at = text.find("final: ");
    return text.substr(at, text.find('\n', at) - at);
  };
  ASSERT_THAT(worker_stdout, HasSubstr("final: "));
  ASSERT_THAT(chief_stdout, HasSubstr("final: "));
  EXPECT_EQ(final_line(chief_stdout), final_line(worker_stdout));
  EXPECT_THAT(chief_stdout, HasSubstr("chief wrote " + out));
  EXPECT_THAT(chief_stdout,
              HasSubstr("final checkpoint: " + CheckpointDirName(200)));
  EXPECT_THAT(worker_stdout, Not(HasSubstr("checkpoint")));
}

}  // namespace
}  // namespace distrt::testing
