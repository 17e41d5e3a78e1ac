#include "deploy/launcher/free_ports.h"

#include <set>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt::launcher {
namespace {

TEST(PickFreePortsTest, PortsAreDistinctAndValid) {
  absl::StatusOr<std::vector<int>> ports = PickFreePorts("127.0.0.1", 64);
  ASSERT_TRUE(ports.ok()) << ports.status();
  ASSERT_EQ(ports->size(), 64u);
  const std::set<int> distinct(ports->begin(), ports->end());
  EXPECT_EQ(distinct.size(), ports->size());
  for (int port : *ports) {
    EXPECT_GT(port, 0);
    EXPECT_LE(port, 65535);
  }
}

TEST(PickFreePortsTest, ZeroPortsIsEmpty) {
  absl::StatusOr<std::vector<int>> ports = PickFreePorts("127.0.0.1", 0);
  ASSERT_TRUE(ports.ok()) << ports.status();
  EXPECT_TRUE(ports->empty());
}

TEST(PickFreePortsTest, Errors) {
  EXPECT_EQ(PickFreePorts("127.0.0.1", -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PickFreePorts("no such host.invalid", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A documentation-range address that is no address of this machine.
  absl::Status not_local = PickFreePorts("192.0.2.1", 1).status();
  EXPECT_EQ(not_local.code(), absl::StatusCode::kUnavailable) << not_local;
  EXPECT_THAT(not_local.message(),
              ::testing::HasSubstr("cannot bind a TCP socket on 192.0.2.1"));
}

TEST(TaskAddressOnTest, BracketsBareIpv6Hosts) {
  EXPECT_EQ(TaskAddressOn("127.0.0.1", 2222), "127.0.0.1:2222");
  EXPECT_EQ(TaskAddressOn("localhost", 1), "localhost:1");
  EXPECT_EQ(TaskAddressOn("::1", 2222), "[::1]:2222");
  EXPECT_EQ(TaskAddressOn("[::1]", 2222), "[::1]:2222");
}

}  // namespace
}  // namespace distrt::launcher
