// Real ps_server processes on 127.0.0.1, operated with distctl.

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/ps/table_policy.h"
#include "tests/util/ps_processes.h"
#include "tests/util/subprocess.h"

namespace distrt {
namespace {

using ::distrt::testing::PsProcess;
using ::distrt::testing::RunSubprocess;
using ::distrt::testing::Subprocess;
using ::distrt::testing::SubprocessOptions;
using ::distrt::testing::SubprocessResult;
using ::testing::HasSubstr;

constexpr char kDistctl[] = "client/distctl";
const absl::Duration kTimeout = absl::Seconds(30);

// Ports in the cluster spec are placeholders: every task gets --port=0.
constexpr char kCluster[] =
    R"({"worker":["127.0.0.1:1"],"ps":["127.0.0.1:2","127.0.0.1:3"]})";

std::string PsTfConfig(int index) { return testing::PsTfConfig(index, 2); }

PsProcess StartPs(int index) {
  absl::StatusOr<PsProcess> ps = testing::StartPsProcess(index, 2);
  EXPECT_TRUE(ps.ok()) << ps.status();
  return ps.ok() ? *std::move(ps) : PsProcess{};
}

// A cluster-spec file naming the ports the ps tasks really listen on.
std::string WriteClusterSpec(const std::string& name, int port0, int port1) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::ofstream(path) << absl::StrCat(R"({"ps":["127.0.0.1:)", port0,
                                      R"(","127.0.0.1:)", port1, R"("]})");
  return path;
}

// `command` is the command and its argument, e.g. {"pull", "w"}.
SubprocessResult Distctl(const std::vector<std::string>& command,
                         const std::string& cluster_spec) {
  SubprocessOptions options;
  options.argv = {kDistctl};
  options.argv.insert(options.argv.end(), command.begin(), command.end());
  options.argv.push_back("--cluster_spec=" + cluster_spec);
  options.argv.push_back("--timeout_secs=5");
  options.env["TF_CONFIG"] = std::nullopt;
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SubprocessResult{};
}

TEST(PsServerProcessTest, StatsSignalsAndShutdown) {
  PsProcess ps0 = StartPs(0);
  PsProcess ps1 = StartPs(1);
  ASSERT_GT(ps0.port, 0);
  ASSERT_GT(ps1.port, 0);
  const std::string spec = WriteClusterSpec("cluster.json", ps0.port, ps1.port);
  // A hash table that admits ids seen twice: each id pulled once gets the
  // unknown row, and is counted on its task.
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create({ps0.address(), ps1.address()}, PsClient::Options());
  ASSERT_TRUE(client.ok()) << client.status();
  HashEmbeddingSpec table;
  table.name = "C1";
  table.dim = 4;
  table.policy.admission.kind = AdmissionKind::kMinCount;
  table.policy.admission.min_count = 2;
  ASSERT_TRUE((*client)->CreateHashTable(table).ok());
  std::vector<int64_t> ids(100);
  for (int64_t i = 0; i < 100; ++i) ids[i] = i * 7919;
  std::vector<float> rows(ids.size() * 4);
  ASSERT_TRUE((*client)->PullHash(table, ids, absl::MakeSpan(rows)).ok());

  SubprocessResult stats = Distctl({"stats"}, spec);
  EXPECT_EQ(stats.exit_code, 0) << stats.stdout_text << stats.stderr_text;
  EXPECT_THAT(stats.stdout_text, HasSubstr("incarnation " + ps0.incarnation));
  EXPECT_THAT(stats.stdout_text, HasSubstr("incarnation " + ps1.incarnation));
  EXPECT_THAT(stats.stdout_text, HasSubstr("ps task 1"));
  // One table line under each task's, its unknown lookups adding up to the
  // ids pulled.
  std::regex table_line(
      "\n    table \"C1\": 0 rows \\(0 B\\)  admitted 0  evicted 0 by ttl, "
      "0 by capacity  unknown lookups ([0-9]+)  dropped pushes 0  clock 0");
  int64_t unknown = 0;
  int lines = 0;
  for (std::sregex_iterator it(stats.stdout_text.begin(),
                               stats.stdout_text.end(), table_line);
       it != std::sregex_iterator(); ++it) {
    unknown += std::stoll((*it)[1]);
    ++lines;
  }
  EXPECT_EQ(lines, 2) << stats.stdout_text;
  EXPECT_EQ(unknown, 100) << stats.stdout_text;

  // SIGTERM: the task stops cleanly and exits 0.
  ps1.process->Signal(SIGTERM);
  absl::StatusOr<SubprocessResult> stopped = ps1.process->Wait(kTimeout);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0) << stopped->stderr_text;
  EXPECT_THAT(stopped->stdout_text, HasSubstr("stopping (SIGTERM)"));

  SubprocessResult partial = Distctl({"stats"}, spec);
  EXPECT_EQ(partial.exit_code, 1) << partial.stderr_text;
  EXPECT_THAT(partial.stdout_text, HasSubstr("unreachable"));

  // Shutdown RPC: ps task 0 exits 0; the command reports task 1 as down.
  SubprocessResult shutdown = Distctl({"shutdown"}, spec);
  EXPECT_EQ(shutdown.exit_code, 1) << shutdown.stderr_text;
  EXPECT_THAT(shutdown.stdout_text, HasSubstr("shutting down"));
  absl::StatusOr<SubprocessResult> ended = ps0.process->Wait(kTimeout);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->exit_code, 0) << ended->stderr_text;
  EXPECT_THAT(ended->stdout_text, HasSubstr("stopping (distctl shutdown)"));
}

TEST(PsServerProcessTest, VarsPullSaveRestore) {
  PsProcess ps0 = StartPs(0);
  PsProcess ps1 = StartPs(1);
  ASSERT_GT(ps0.port, 0);
  ASSERT_GT(ps1.port, 0);
  const std::string spec = WriteClusterSpec("vars.json", ps0.port, ps1.port);
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create({ps0.address(), ps1.address()}, PsClient::Options());
  ASSERT_TRUE(client.ok()) << client.status();
  VariableSpec small{"small", DType::kFloat32, {2, 2}, {}, {}};
  small.initializer.kind = InitializerSpec::Kind::kConstant;
  small.initializer.value = 0.5f;
  ASSERT_TRUE((*client)->CreateVariable(small).ok());
  VariableSpec emb{"emb", DType::kFloat32, {100, 8}, {}, {}};
  emb.initializer.kind = InitializerSpec::Kind::kUniform;
  emb.initializer.minval = -1.0f;
  emb.initializer.maxval = 1.0f;
  emb.optimizer.kind = OptimizerKind::kAdam;
  ASSERT_TRUE(
      (*client)->CreateVariable(emb, PartitionPolicy::FixedShards(2)).ok());
  absl::StatusOr<VariablePlacement> step = (*client)->CreateVariable(
      VariableSpec{"global_step", DType::kInt64, {}, {}, {}});
  ASSERT_TRUE(step.ok());
  ASSERT_TRUE((*client)->AddInt64(*step, std::vector<int64_t>{7}).ok());

  SubprocessResult vars = Distctl({"vars"}, spec);
  EXPECT_EQ(vars.exit_code, 0) << vars.stderr_text;
  EXPECT_THAT(vars.stdout_text,
              HasSubstr("rows 0-50 on ps 1, rows 50-100 on ps 0"));
  EXPECT_THAT(vars.stdout_text, HasSubstr("9.4 KiB"));  // 800 floats x 3
  EXPECT_THAT(vars.stdout_text, HasSubstr("[2, 2]"));

  SubprocessResult pulled = Distctl({"pull", "small"}, spec);
  EXPECT_EQ(pulled.exit_code, 0) << pulled.stderr_text;
  EXPECT_THAT(pulled.stdout_text, HasSubstr("values: [0.5, 0.5, 0.5, 0.5]"));
  SubprocessResult summary = Distctl({"pull", "emb"}, spec);
  EXPECT_EQ(summary.exit_code, 0) << summary.stderr_text;
  EXPECT_THAT(summary.stdout_text, HasSubstr("first 20 of 800 values"));
  EXPECT_THAT(summary.stdout_text, HasSubstr("mean"));
  SubprocessResult missing = Distctl({"pull", "nope"}, spec);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.stderr_text, HasSubstr("\"nope\" is on none of"));
  EXPECT_EQ(Distctl({"pull"}, spec).exit_code, 2);

  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/ckpts");
  SubprocessResult saved = Distctl({"save", dir}, spec);
  EXPECT_EQ(saved.exit_code, 0) << saved.stderr_text;
  EXPECT_THAT(saved.stdout_text,
              HasSubstr("saved step 7 to " + dir + "/ckpt-000000000007"));
  ASSERT_TRUE((*client)->AddInt64(*step, std::vector<int64_t>{5}).ok());
  SubprocessResult restored = Distctl({"restore", dir}, spec);
  EXPECT_EQ(restored.exit_code, 0) << restored.stderr_text;
  EXPECT_THAT(restored.stdout_text, HasSubstr("restored step 7"));
  int64_t global_step = 0;
  ASSERT_TRUE(
      (*client)->PullInt64(*step, absl::MakeSpan(&global_step, 1)).ok());
  EXPECT_EQ(global_step, 7);
}

SubprocessResult RunPsServer(std::optional<std::string> tf_config,
                             std::vector<std::string> flags = {}) {
  SubprocessOptions options;
  options.argv = {testing::kPsServerBinary, "--bind_host=127.0.0.1"};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.env["TF_CONFIG"] = std::move(tf_config);
  options.timeout = kTimeout;
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SubprocessResult{};
}

TEST(PsServerProcessTest, BadInputExitsTwoWithOneLine) {
  SubprocessResult worker = RunPsServer(absl::StrCat(
      R"({"cluster":)", kCluster, R"(,"task":{"type":"worker","index":0}})"));
  EXPECT_EQ(worker.exit_code, 2);
  EXPECT_EQ(worker.stderr_text,
            "ps_server: TF_CONFIG's task is worker 0, not a ps task; start a "
            "worker for it instead\n");

  SubprocessResult unset = RunPsServer(std::nullopt);
  EXPECT_EQ(unset.exit_code, 2);
  EXPECT_THAT(unset.stderr_text,
              HasSubstr("ps_server: TF_CONFIG must name a ps task"));

  SubprocessResult invalid = RunPsServer(R"({"cluster":{"ps":["a"]}})");
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_EQ(invalid.stderr_text,
            "ps_server: TF_CONFIG: job \"ps\" task 0: address \"a\" has no "
            "port; write it as \"host:port\"\n");

  SubprocessResult bad_port = RunPsServer(PsTfConfig(0), {"--port=70000"});
  EXPECT_EQ(bad_port.exit_code, 2);
  EXPECT_EQ(bad_port.stderr_text,
            "ps_server: --port=70000 is not a port (0 to 65535)\n");
}

TEST(PsServerProcessTest, BusyPortExitsTwo) {
  PsProcess ps0 = StartPs(0);
  ASSERT_GT(ps0.port, 0);
  SubprocessResult second =
      RunPsServer(PsTfConfig(1), {absl::StrCat("--port=", ps0.port)});
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_EQ(second.stderr_text,
            absl::StrCat("ps_server: cannot listen on 127.0.0.1:", ps0.port,
                         " (is the port in use, or the host not an address "
                         "of this machine?)\n"));
  ps0.process->Signal(SIGTERM);
  absl::StatusOr<SubprocessResult> stopped = ps0.process->Wait(kTimeout);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0);
}

}  // namespace
}  // namespace distrt
