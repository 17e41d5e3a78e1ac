#include "runtime/metrics/metrics_listen_host.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

TEST(MetricsListenHostTest, WithoutTlsTheTaskHostIsTheDefault) {
  EXPECT_EQ(*MetricsListenHost("", "10.0.0.7", false), "10.0.0.7");
  EXPECT_EQ(*MetricsListenHost("", "[fd00::7]", false), "fd00::7");
  EXPECT_EQ(*MetricsListenHost("0.0.0.0", "10.0.0.7", false), "0.0.0.0");
}

TEST(MetricsListenHostTest, WithTlsLoopbackIsTheDefault) {
  EXPECT_EQ(*MetricsListenHost("", "10.0.0.7", true), "127.0.0.1");
  EXPECT_EQ(*MetricsListenHost("::1", "10.0.0.7", true), "::1");
  EXPECT_EQ(*MetricsListenHost("[::1]", "10.0.0.7", true), "::1");
  EXPECT_EQ(*MetricsListenHost("127.0.0.5", "10.0.0.7", true), "127.0.0.5");
  EXPECT_EQ(*MetricsListenHost("localhost", "10.0.0.7", true), "localhost");
}

TEST(MetricsListenHostTest, WithTlsAnyOtherHostIsRefusedNamingTheFlag) {
  for (const char* host :
       {"0.0.0.0", "::", "10.0.0.7", "ps-0.svc", "128.0.0.1"}) {
    absl::StatusOr<std::string> chosen =
        MetricsListenHost(host, "10.0.0.7", true);
    ASSERT_FALSE(chosen.ok()) << host;
    EXPECT_EQ(chosen.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(chosen.status().message(),
                HasSubstr(std::string("--metrics_host=") + host));
    EXPECT_THAT(chosen.status().message(), HasSubstr("loopback only"));
  }
}

}  // namespace
}  // namespace distrt
