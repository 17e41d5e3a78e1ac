// Whole jobs started by `launch` on 127.0.0.1: ps_server tasks, a chief,
// workers and an evaluator as real processes. Each test generates its data
// with gen_data (known ground truth), runs a job and checks what a user
// would: the exit status, the prefixed output, the job dir and the quality
// the model reached. launch stops every task when it exits; a launch that
// a test leaves running is SIGKILLed by Subprocess, and its tasks die with
// it (they are started with PR_SET_PDEATHSIG).

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

struct ModelCase {
  const char* model;
  const char* data;  // gen_data --task
  std::vector<std::string> data_flags;
  std::vector<std::string> model_flags;
  const char* metric;  // in metrics.json
  // eval_accuracy at least this, or eval_rmse at most this. gen_data says
  // what the true model gets: about 0.90 accuracy for both classification
  // datasets, RMSE 0.10 for the regression one.
  double bound;
};

std::string PrintCase(const ::testing::TestParamInfo<ModelCase>& info) {
  return info.param.model;
}

class ModelQualityTest : public ::testing::TestWithParam<ModelCase> {};

// 2 ps tasks, a chief and a worker train each model asynchronously.
TEST_P(ModelQualityTest, ReachesItsStatedQualityOnTwoPsAndTwoWorkers) {
  const ModelCase& c = GetParam();
  TestDir dir;
  std::vector<std::string> data_flags = c.data_flags;
  data_flags.push_back(absl::StrCat("--task=", c.data));
  GenerateData(dir.path() + "/data", "d", data_flags);
  std::vector<std::string> flags = {
      "--model=" + std::string(c.model),
      "--train_data=" + dir.path() + "/data/d.train.svm",
      "--eval_data=" + dir.path() + "/data/d.eval.svm",
      "--train_steps=2000",
      "--global_batch_size=64",
      "--log_every_secs=2",
      "--wait_secs=120"};
  flags.insert(flags.end(), c.model_flags.begin(), c.model_flags.end());
  const std::string job_dir = dir.path() + "/job";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
      {"--ps=2", "--workers=1", "--chief", "--job_dir=" + job_dir}, flags));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text << result->stderr_text;
  const nlohmann::json metrics = ReadJson(job_dir + "/metrics.json");
  ASSERT_TRUE(metrics[c.metric].is_number()) << metrics.dump();
  const double value = metrics[c.metric].get<double>();
  if (std::string(c.metric) == "eval_rmse") {
    EXPECT_LE(value, c.bound) << metrics.dump();
  } else {
    EXPECT_GE(value, c.bound) << metrics.dump();
  }
  EXPECT_GE(metrics["global_step"].get<int64_t>(), 2000);
}

INSTANTIATE_TEST_SUITE_P(
    EveryModel, ModelQualityTest,
    ::testing::Values(
        ModelCase{"logreg",
                  "binary",
                  {"--rows=30000", "--features=200", "--features_per_row=10"},
                  {},
                  "eval_accuracy",
                  0.85},
        ModelCase{"wide_deep",
                  "binary",
                  {"--rows=30000", "--features=200", "--features_per_row=10"},
                  {"--optimizer=adagrad", "--learning_rate=0.1"},
                  "eval_accuracy",
                  0.85},
        ModelCase{"mlp",
                  "multiclass",
                  {"--rows=20000", "--features=20", "--features_per_row=20",
                   "--classes=4"},
                  {"--optimizer=adam", "--learning_rate=0.01"},
                  "eval_accuracy",
                  0.80},
        ModelCase{"linear",
                  "regression",
                  {"--rows=20000", "--features=20", "--features_per_row=20",
                   "--noise=0.1"},
                  {"--optimizer=sgd", "--learning_rate=0.05"},
                  "eval_rmse",
                  0.15}),
    PrintCase);

// The multi-worker mirrored job of the issue: 3 workers (no chief, no ps
// tasks: worker 0 is the chief) and an evaluator, against the same model
// trained by 2 ps tasks, a chief and a worker on the same data.
TEST(MultiWorkerLaunchTest, ThreeWorkersTrainToThePsJobsQuality) {
  TestDir dir;
  GenerateData(dir.path() + "/data", "d",
               {"--task=binary", "--rows=30000", "--features=200",
                "--features_per_row=10"});
  const std::vector<std::string> flags = {
      "--model=logreg",
      "--train_data=" + dir.path() + "/data/d.train.svm",
      "--eval_data=" + dir.path() + "/data/d.eval.svm",
      "--train_steps=1000",
      "--global_batch_size=96",
      "--checkpoint_every_steps=250",
      "--log_every_secs=2",
      "--wait_secs=120"};
  std::vector<std::string> mirrored_flags = flags;
  mirrored_flags.push_back("--strategy=multi_worker_mirrored");
  const std::string mirrored_dir = dir.path() + "/mirrored";
  absl::StatusOr<SubprocessResult> mirrored = RunSubprocess(LaunchProcess(
      {"--ps=0", "--workers=3", "--evaluator", "--job_dir=" + mirrored_dir},
      mirrored_flags));
  ASSERT_TRUE(mirrored.ok()) << mirrored.status();
  ASSERT_EQ(mirrored->exit_code, 0)
      << mirrored->stdout_text << mirrored->stderr_text;
  EXPECT_THAT(mirrored->stdout_text,
              HasSubstr("[worker:0] MultiWorkerMirroredStrategy: worker 0 of "
                        "3"));
  EXPECT_THAT(mirrored->stdout_text,
              HasSubstr("[evaluator:0] evaluated the final checkpoint"));

  const std::string ps_dir = dir.path() + "/ps";
  absl::StatusOr<SubprocessResult> ps = RunSubprocess(LaunchProcess(
      {"--ps=2", "--workers=1", "--chief", "--job_dir=" + ps_dir}, flags));
  ASSERT_TRUE(ps.ok()) << ps.status();
  ASSERT_EQ(ps->exit_code, 0) << ps->stdout_text << ps->stderr_text;

  const nlohmann::json m = ReadJson(mirrored_dir + "/metrics.json");
  const nlohmann::json p = ReadJson(ps_dir + "/metrics.json");
  // Every step of the mirrored job is one step of all three workers.
  EXPECT_EQ(m["global_step"].get<int64_t>(), 1000);
  EXPECT_GE(m["eval_accuracy"].get<double>(), 0.85) << m.dump();
  EXPECT_NEAR(m["eval_accuracy"].get<double>(),
              p["eval_accuracy"].get<double>(), 0.02)
      << m.dump() << " vs " << p.dump();
  const nlohmann::json evaluator =
      ReadJson(mirrored_dir + "/metrics.evaluator.json");
  EXPECT_NEAR(evaluator["eval_accuracy"].get<double>(),
              m["eval_accuracy"].get<double>(), 1e-9);
}

// Under --secure the workers' collectives go over the TLS ring (mutual
// TLS and the job's token on every connection), not Gloo's plain TCP, and
// the job trains the same.
TEST(MultiWorkerLaunchTest, ASecureJobRunsItsCollectivesOverTheTlsRing) {
  TestDir dir;
  GenerateData(dir.path() + "/data", "d",
               {"--task=binary", "--rows=10000", "--features=200",
                "--features_per_row=10"});
  absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
      {"--ps=0", "--workers=3", "--secure", "--job_dir=" + dir.path() + "/job"},
      {"--model=logreg", "--train_data=" + dir.path() + "/data/d.train.svm",
       "--eval_data=" + dir.path() + "/data/d.eval.svm", "--train_steps=500",
       "--global_batch_size=96", "--wait_secs=120",
       "--strategy=multi_worker_mirrored"}));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out << result->stderr_text;
  for (int w = 0; w < 3; ++w) {
    EXPECT_THAT(out,
                HasSubstr(absl::StrCat(
                    "[worker:", w, "] joined the 3 training tasks as rank ", w,
                    "; collectives over a TLS ring (mutual TLS, "
                    "cluster token)")));
  }
  EXPECT_THAT(out, ::testing::Not(HasSubstr("refused the connection")));
  const nlohmann::json m = ReadJson(dir.path() + "/job/metrics.json");
  EXPECT_EQ(m["global_step"].get<int64_t>(), 500);
  EXPECT_GE(m["eval_accuracy"].get<double>(), 0.85) << m.dump();
}

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GenerateData(dir_.path() + "/data", "d",
                 {"--task=binary", "--rows=10000", "--features=200",
                  "--features_per_row=10"});
  }
  std::vector<std::string> TrainingFlags(int train_steps) {
    return {"--model=logreg",
            "--train_data=" + dir_.path() + "/data/d.train.svm",
            "--eval_data=" + dir_.path() + "/data/d.eval.svm",
            absl::StrCat("--train_steps=", train_steps),
            "--global_batch_size=64",
            "--checkpoint_every_steps=100",
            "--log_every_secs=1",
            "--wait_secs=120"};
  }
  std::string job_dir() const { return dir_.path() + "/job"; }

  // Runs a secure job in job_dir() and expects launch to refuse it before
  // it starts any task: exit code 2 and `message` on stderr.
  void ExpectSecureLaunchRefused(const std::string& message) {
    absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
        {"--ps=1", "--workers=1", "--secure", "--job_dir=" + job_dir()},
        TrainingFlags(100)));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->exit_code, 2);
    EXPECT_THAT(result->stderr_text, HasSubstr(message));
    EXPECT_THAT(result->stdout_text, ::testing::Not(HasSubstr("started")));
  }

  TestDir dir_;
};

TEST_F(LaunchTest, AJobWithAnEvaluatorKeepsEverythingInItsJobDir) {
  absl::StatusOr<SubprocessResult> result =
      RunSubprocess(LaunchProcess({"--ps=2", "--workers=1", "--chief",
                                   "--evaluator", "--job_dir=" + job_dir()},
                                  TrainingFlags(500)));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text << result->stderr_text;
  const std::string& out = result->stdout_text;
  EXPECT_THAT(out, HasSubstr("[ps:1] "));
  EXPECT_THAT(out, HasSubstr("[worker:0] "));
  EXPECT_THAT(out, HasSubstr("[chief:0] eval: "));
  EXPECT_THAT(out, HasSubstr("[evaluator:0] evaluated the final checkpoint"));
  EXPECT_THAT(out, HasSubstr("launch: job finished"));

  // tasks.json: every task once, on its own port, with its pid.
  const nlohmann::json tasks = ReadJson(job_dir() + "/tasks.json");
  ASSERT_EQ(tasks["tasks"].size(), 5u) << tasks.dump();
  std::set<std::string> names, addresses;
  for (const nlohmann::json& task : tasks["tasks"]) {
    names.insert(absl::StrCat(task["type"].get<std::string>(), ":",
                              task["index"].get<int>()));
    addresses.insert(task["address"].get<std::string>());
    EXPECT_GT(task["pid"].get<int>(), 0);
  }
  EXPECT_EQ(names, (std::set<std::string>{"chief:0", "evaluator:0", "ps:0",
                                          "ps:1", "worker:0"}));
  EXPECT_EQ(addresses.size(), 5u);
  EXPECT_EQ(tasks["cluster"]["ps"].size(), 2u);

  // Logs, checkpoints, summaries and both metrics files, by default.
  absl::StatusOr<std::string> chief_log =
      ReadFileToString(job_dir() + "/logs/chief-0.log");
  ASSERT_TRUE(chief_log.ok()) << chief_log.status();
  EXPECT_THAT(*chief_log, HasSubstr("final checkpoint"));
  EXPECT_TRUE(*PathExists(job_dir() + "/checkpoints/final_checkpoint"));
  EXPECT_TRUE(*PathExists(job_dir() + "/summaries/eval"));
  const nlohmann::json chief = ReadJson(job_dir() + "/metrics.json");
  const nlohmann::json evaluator =
      ReadJson(job_dir() + "/metrics.evaluator.json");
  EXPECT_EQ(chief["global_step"], evaluator["global_step"]);
  EXPECT_NEAR(chief["eval_accuracy"].get<double>(),
              evaluator["eval_accuracy"].get<double>(), 1e-9);
}

TEST_F(LaunchTest, AKubeflowTfConfigAsClusterSpecStartsTheSameJob) {
  // What the TFJob operator writes into a pod: cluster keys sorted, task,
  // "environment": "cloud". launch takes the cluster and replaces the
  // addresses with free local ports.
  const std::string spec = dir_.path() + "/tf_config.json";
  std::ofstream(spec)
      << R"({"cluster":{"chief":["distrt-logreg-chief-0.default.svc:2222"],)"
      << R"("ps":["distrt-logreg-ps-0.default.svc:2222",)"
      << R"("distrt-logreg-ps-1.default.svc:2222"],)"
      << R"("worker":["distrt-logreg-worker-0.default.svc:2222"]},)"
      << R"("task":{"type":"worker","index":0},"environment":"cloud"})";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(
      LaunchProcess({"--cluster_spec=" + spec, "--job_dir=" + job_dir()},
                    TrainingFlags(300)));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stdout_text << result->stderr_text;
  EXPECT_THAT(result->stdout_text,
              HasSubstr("[chief:0] ParameterServerStrategy"));
  EXPECT_GT(
      ReadJson(job_dir() + "/metrics.json")["eval_accuracy"].get<double>(),
      0.8);
}

TEST_F(LaunchTest, ASecureJobUsesMutualTlsAndATokenEverywhere) {
  absl::StatusOr<SubprocessResult> result = RunSubprocess(
      LaunchProcess({"--ps=2", "--workers=1", "--chief", "--evaluator",
                     "--secure", "--job_dir=" + job_dir()},
                    TrainingFlags(300)));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out << result->stderr_text;
  EXPECT_THAT(out, HasSubstr("launch: every task uses mutual TLS and a "
                             "cluster token"));
  EXPECT_THAT(out, HasSubstr(", mutual TLS, cluster token"));
  EXPECT_GT(
      ReadJson(job_dir() + "/metrics.json")["eval_accuracy"].get<double>(),
      0.8);
  // The evaluator restored every checkpoint in-process: no server of its
  // own, so no token on any wire of its.
  EXPECT_THAT(out, HasSubstr("[evaluator:0] evaluated the final checkpoint"));
  // The secrets, logs and checkpoints are the launcher's user's alone.
  struct stat info;
  ASSERT_EQ(stat(job_dir().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((job_dir() + "/security").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((job_dir() + "/security/token").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((job_dir() + "/security/ps-1/key.pem").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

// Another user (uid 65534, nobody) planted a world-writable security
// directory with a token file before the job started: launch must neither
// write the live token into it nor start anything.
TEST_F(LaunchTest, ASecureJobRefusesASecurityDirectoryItDidNotMake) {
  if (geteuid() != 0) GTEST_SKIP() << "giving files to another user needs root";
  const std::string security = job_dir() + "/security";
  ASSERT_EQ(mkdir(job_dir().c_str(), 0700), 0);
  ASSERT_EQ(mkdir(security.c_str(), 0777), 0);
  ASSERT_EQ(chmod(security.c_str(), 0777), 0);
  const std::string planted = "planted-token-0123456789abcdef\n";
  std::ofstream(security + "/token") << planted;
  ASSERT_EQ(chmod((security + "/token").c_str(), 0666), 0);
  ASSERT_EQ(chown(security.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chown((security + "/token").c_str(), 65534, 65534), 0);

  ExpectSecureLaunchRefused("--secure: " + security +
                            " is already there and is owned by uid 65534");
  std::ifstream token(security + "/token");
  std::string kept((std::istreambuf_iterator<char>(token)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, planted);
}

// The same user's own directory, private, but a token file that others may
// read (left by hand, or planted through a looser moment): refused by name.
TEST_F(LaunchTest, ASecureJobRefusesALooseTokenFile) {
  const std::string security = job_dir() + "/security";
  ASSERT_EQ(mkdir(job_dir().c_str(), 0700), 0);
  ASSERT_EQ(mkdir(security.c_str(), 0700), 0);
  std::ofstream(security + "/token") << "old-token-0123456789abcdef\n";
  ASSERT_EQ(chmod((security + "/token").c_str(), 0644), 0);

  ExpectSecureLaunchRefused("--secure: " + security +
                            "/token is already there and has mode 0644, open "
                            "to group or others");
}

TEST_F(LaunchTest, AGrpcPlusTcpJobSendsItsTensorsOverTheDataPlane) {
  absl::StatusOr<SubprocessResult> result = RunSubprocess(
      LaunchProcess({"--ps=2", "--workers=1", "--chief", "--rpc_layer=grpc+tcp",
                     "--job_dir=" + job_dir()},
                    TrainingFlags(300)));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out << result->stderr_text;
  EXPECT_THAT(out, HasSubstr("[ps:1] ps_server: tensors also over the TCP "
                             "data plane on 127.0.0.1:"));
  // Both training tasks learned both data planes.
  EXPECT_THAT(out, HasSubstr("[chief:0] ps task 1 (127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("): tensors over its TCP data plane at port "));
  EXPECT_THAT(out, HasSubstr("[worker:0] ps task 0 (127.0.0.1:"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("go over gRPC")));
  EXPECT_GT(
      ReadJson(job_dir() + "/metrics.json")["eval_accuracy"].get<double>(),
      0.8);
}

TEST_F(LaunchTest, AnRpcLayerIsCheckedBeforeAnythingStarts) {
  absl::StatusOr<SubprocessResult> unknown = RunSubprocess(
      LaunchProcess({"--ps=1", "--workers=1", "--rpc_layer=grpc+verbs",
                     "--job_dir=" + job_dir()},
                    TrainingFlags(100)));
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(unknown->exit_code, 2);
  EXPECT_THAT(unknown->stderr_text,
              HasSubstr("\"grpc+verbs\" is not one this runtime speaks"));
  EXPECT_THAT(unknown->stdout_text, ::testing::Not(HasSubstr("started")));
}

TEST_F(LaunchTest, ASecureGrpcPlusTcpJobKeepsTlsAndTheTokenOnTheDataPlane) {
  absl::StatusOr<SubprocessResult> result = RunSubprocess(
      LaunchProcess({"--ps=2", "--workers=1", "--chief", "--rpc_layer=grpc+tcp",
                     "--secure", "--job_dir=" + job_dir()},
                    TrainingFlags(300)));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& out = result->stdout_text;
  ASSERT_EQ(result->exit_code, 0) << out << result->stderr_text;
  EXPECT_THAT(out, HasSubstr("[ps:0] ps_server: tensors also over the TCP "
                             "data plane on 127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("(rpc_layer \"grpc+tcp\"), mutual TLS, "
                             "cluster token"));
  EXPECT_THAT(out, HasSubstr("[chief:0] ps task 1 (127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("[worker:0] ps task 0 (127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("): tensors over its TCP data plane at port "));
  // No task fell back to gRPC: every handshake and token check passed.
  EXPECT_THAT(out, ::testing::Not(HasSubstr("go over gRPC")));
  EXPECT_THAT(result->stderr_text, ::testing::Not(HasSubstr("go over gRPC")));
  EXPECT_GT(
      ReadJson(job_dir() + "/metrics.json")["eval_accuracy"].get<double>(),
      0.8);
}

TEST_F(LaunchTest, BadSecurityFlagsAreRefusedBeforeAnythingStarts) {
  absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
      {"--ps=1", "--workers=1", "--tls_cert=" + dir_.path() + "/nope.pem",
       "--job_dir=" + job_dir()},
      TrainingFlags(100)));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 2);
  EXPECT_THAT(result->stderr_text,
              HasSubstr("TLS needs --tls_cert, --tls_key and --tls_ca "
                        "together; missing --tls_key, --tls_ca"));
  EXPECT_THAT(result->stdout_text, ::testing::Not(HasSubstr("started")));
}

TEST_F(LaunchTest, AFailingTaskFailsTheJobAndIsNamed) {
  // A worker whose training data does not exist fails at once; the chief,
  // which would otherwise wait for it, is stopped.
  std::vector<std::string> flags = TrainingFlags(100000);
  flags[1] = "--train_data=" + dir_.path() + "/missing.svm";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(LaunchProcess(
      {"--ps=1", "--workers=1", "--job_dir=" + job_dir()}, flags));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 1);
  EXPECT_THAT(result->stdout_text, HasSubstr("missing.svm"));
  EXPECT_THAT(result->stdout_text,
              HasSubstr("launch: job failed: worker:0 exited with status"));
}

TEST_F(LaunchTest, CtrlCStopsEveryTask) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch =
      Subprocess::Start(LaunchProcess(
          {"--ps=2", "--workers=1", "--chief", "--job_dir=" + job_dir()},
          TrainingFlags(100000000)));
  ASSERT_TRUE(launch.ok()) << launch.status();
  // Until the chief trains: every task is up by then.
  bool training = false;
  for (int lines = 0; lines < 1000 && !training; ++lines) {
    absl::StatusOr<std::string> line =
        (*launch)->ReadStdoutLine(absl::Minutes(1));
    ASSERT_TRUE(line.ok()) << line.status();
    training = line->find("[chief:0] training from global step") == 0;
  }
  ASSERT_TRUE(training);
  const nlohmann::json tasks = ReadJson(job_dir() + "/tasks.json");
  ASSERT_EQ(tasks["tasks"].size(), 4u);

  (*launch)->Signal(SIGINT);
  absl::StatusOr<SubprocessResult> result = (*launch)->Wait(absl::Minutes(1));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 130);
  EXPECT_THAT(result->stdout_text, HasSubstr("launch: interrupted"));
  // launch reaps its tasks before it exits.
  for (const nlohmann::json& task : tasks["tasks"]) {
    EXPECT_FALSE(ProcessExists(task["pid"].get<int>())) << task.dump();
  }
}

}  // namespace
}  // namespace distrt::testing
