// The Prometheus metrics a ps_server process serves (--metrics_port) and
// those of a training task, checked with Prometheus' own linter:
// `promtool check metrics` (Debian package prometheus, installed by
// tools/setup.sh).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/metrics/metrics_registry.h"
#include "runtime/ps/table_policy.h"
#include "runtime/util/test_dir.h"
#include "tests/util/ps_processes.h"
#include "tests/util/subprocess.h"
#include "worker/training_metrics.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

// The body of GET /metrics on 127.0.0.1:`port` (HTTP/1.0: the server closes
// the connection after the response).
std::string Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    close(fd);
    ADD_FAILURE() << "cannot connect to 127.0.0.1:" << port;
    return "";
  }
  const std::string request =
      "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(write(fd, request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t got; (got = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, got);
  }
  close(fd);
  EXPECT_THAT(response.substr(0, response.find("\r\n")),
              ::testing::MatchesRegex("HTTP/1\\.[01] 200 .*"));
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// promtool's verdict on `exposition`: its exit code and what it said.
std::pair<int, std::string> PromtoolCheck(const std::string& exposition) {
  TestDir dir;
  const std::string path = dir.WriteFile("metrics.txt", exposition);
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c",
                  absl::StrCat("promtool check metrics < '", path, "'")};
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {-1, ""};
  return {result->exit_code, result->stdout_text + result->stderr_text};
}

TEST(MetricsExpositionTest, PsServerMetricsCountRequestsAndPassPromtool) {
  const absl::Time test_start = absl::Now();
  absl::StatusOr<PsProcess> ps = StartPsProcess(0, 1, {"--metrics_port=0"});
  ASSERT_TRUE(ps.ok()) << ps.status();
  absl::StatusOr<std::string> line =
      ps->process->ReadStdoutLine(absl::Seconds(30));
  ASSERT_TRUE(line.ok()) << line.status();
  std::smatch match;
  ASSERT_TRUE(std::regex_match(
      *line, match,
      std::regex("ps_server: metrics at http://127\\.0\\.0\\.1:([0-9]+)/"
                 "metrics")))
      << *line;
  const int port = std::stoi(match[1]);

  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create({ps->address()}, PsClient::Options());
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<VariablePlacement> w = (*client)->CreateVariable(
      VariableSpec{"w", DType::kFloat32, {1000}, {}, {}});
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<float> values(1000, 1.0f);
  ASSERT_TRUE((*client)->Push(*w, values).ok());
  ASSERT_TRUE((*client)->Pull(*w, absl::MakeSpan(values)).ok());
  EXPECT_FALSE((*client)->LookupVariable("nope").ok());
  // A hash table with a TTL: rows pushed count as admitted.
  HashEmbeddingSpec table;
  table.name = "C1";
  table.dim = 2;
  table.policy.eviction.ttl_steps = 100;
  ASSERT_TRUE((*client)->CreateHashTable(table).ok());
  ASSERT_TRUE((*client)->PushHash(table, {5, 6, 7}, {1, 1, 1, 1, 1, 1}).ok());

  const std::string metrics = Scrape(port);
  EXPECT_THAT(metrics, HasSubstr("distrt_ps_table_rows{table=\"C1\"} 3\n"));
  EXPECT_THAT(metrics,
              HasSubstr("distrt_ps_table_admitted_total{table=\"C1\"} 3\n"));
  EXPECT_THAT(metrics, HasSubstr("distrt_ps_table_evicted_total{table=\"C1\","
                                 "reason=\"ttl\"} 0\n"));
  EXPECT_THAT(metrics, HasSubstr("distrt_ps_table_dropped_pushes_total{table="
                                 "\"C1\"} 0\n"));
  EXPECT_THAT(metrics, HasSubstr("distrt_rpc_requests_total{method=\"PushDense"
                                 "\",code=\"OK\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("distrt_rpc_requests_total{method=\"LookupVa"
                                 "riable\",code=\"NOT_FOUND\"} "));
  EXPECT_THAT(metrics, HasSubstr("distrt_rpc_latency_seconds_count{method=\""
                                 "PullDense\"} 1\n"));
  // Started within the test's run, in Unix seconds.
  std::smatch started;
  ASSERT_TRUE(std::regex_search(
      metrics, started,
      std::regex("\nprocess_start_time_seconds ([0-9.e+]+)\n")));
  const double start = std::stod(started[1]);
  EXPECT_GT(start, absl::ToDoubleSeconds(test_start - absl::UnixEpoch()) - 1);
  EXPECT_LT(start, absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) + 1);
  EXPECT_THAT(metrics, HasSubstr("distrt_rpc_latency_seconds_bucket{method=\""
                                 "PullDense\",le=\"+Inf\"} 1\n"));
  // The gradient went in, the values came out: 4000 bytes each and framing.
  std::smatch bytes;
  ASSERT_TRUE(std::regex_search(
      metrics, bytes,
      std::regex("distrt_rpc_received_bytes_total\\{method=\"PushDense\"\\} "
                 "([0-9]+)")));
  EXPECT_GE(std::stoll(bytes[1]), 4000);
  ASSERT_TRUE(std::regex_search(
      metrics, bytes,
      std::regex("distrt_rpc_sent_bytes_total\\{method=\"PullDense\"\\} "
                 "([0-9]+)")));
  EXPECT_GE(std::stoll(bytes[1]), 4000);
  EXPECT_THAT(metrics, HasSubstr("distrt_ps_variables 1\n"));
  EXPECT_THAT(metrics, HasSubstr("distrt_ps_variable_rows 1000\n"));
  EXPECT_THAT(metrics, HasSubstr("distrt_ps_restored_from_checkpoint 0\n"));

  const auto [code, said] = PromtoolCheck(metrics);
  EXPECT_EQ(code, 0) << said << "\n" << metrics;
}

TEST(MetricsExpositionTest, TrainingMetricsPassPromtool) {
  MetricsRegistry registry;
  absl::StatusOr<std::unique_ptr<TrainingMetrics>> metrics =
      TrainingMetrics::Create(&registry);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  (*metrics)->AddStep(64, 10);
  (*metrics)->AddStep(64, 12);
  (*metrics)->AddPsRestart();
  const std::string text = registry.Exposition();
  EXPECT_THAT(text, HasSubstr("distrt_training_steps_total 2\n"));
  EXPECT_THAT(text, HasSubstr("distrt_training_examples_total 128\n"));
  EXPECT_THAT(text, HasSubstr("distrt_global_step 12\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_task_restarts_total 1\n"));
  const auto [code, said] = PromtoolCheck(text);
  EXPECT_EQ(code, 0) << said << "\n" << text;
}

TEST(MetricsExpositionTest, PromtoolCatchesABadExposition) {
  // The check above could fail: promtool does refuse what is wrong.
  const auto [code, said] = PromtoolCheck(
      "# HELP x_total A counter.\n# TYPE x_total counter\n"
      "x_total{le=\"oops} 1\n");
  EXPECT_NE(code, 0) << said;
}

}  // namespace
}  // namespace distrt::testing
