#include "runtime/metrics/metrics_endpoint.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/metrics/metrics_registry.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(MetricsEndpointTest, ListensOnTheTaskHostOnAFreePort) {
  MetricsRegistry registry;
  MetricsEndpointOptions options;
  options.registry = &registry;
  options.task_host = "127.0.0.1";
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      StartMetricsEndpoint(options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  EXPECT_THAT((*server)->url(),
              MatchesRegex("http://127\\.0\\.0\\.1:[0-9]+/metrics"));
}

// In a job with TLS the endpoint stays on loopback, whatever the task's host.
TEST(MetricsEndpointTest, LoopbackInAJobWithTls) {
  MetricsRegistry registry;
  MetricsEndpointOptions options;
  options.registry = &registry;
  options.task_host = "192.0.2.7";  // TEST-NET-1: not this machine's
  options.job_uses_tls = true;
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      StartMetricsEndpoint(options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->url(), HasSubstr("http://127.0.0.1:"));

  options.requested_host = "0.0.0.0";
  absl::Status refused = StartMetricsEndpoint(options).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(),
              HasSubstr("--metrics_host=0.0.0.0: the metrics endpoint is "
                        "plain HTTP"));
}

TEST(MetricsEndpointTest, ServerErrorsNameThePortFlag) {
  MetricsRegistry registry;
  MetricsEndpointOptions options;
  options.registry = &registry;
  options.port = 70000;
  absl::Status refused = StartMetricsEndpoint(options).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "--metrics_port: metrics server on 127.0.0.1:70000: port is not "
            "in [0, 65535]");
}

}  // namespace
}  // namespace distrt
