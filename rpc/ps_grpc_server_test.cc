#include "rpc/ps_grpc_server.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rpc/ps_admin_client.h"

namespace distrt::rpc {
namespace {

std::unique_ptr<PsGrpcServer> StartOnFreePort(int task_index) {
  absl::StatusOr<std::unique_ptr<PsGrpcServer>> server =
      PsGrpcServer::Start({"127.0.0.1:0", task_index, absl::Seconds(1)});
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string AddressOf(const PsGrpcServer& server) {
  return absl::StrCat("127.0.0.1:", server.port());
}

TEST(PsGrpcServerTest, StatusReportsIndexAndIncarnation) {
  std::unique_ptr<PsGrpcServer> server = StartOnFreePort(3);
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  absl::StatusOr<PsTaskStatus> status =
      GetPsTaskStatus(AddressOf(*server), "ps task 3", absl::Seconds(10));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->task_index, 3);
  EXPECT_EQ(status->incarnation, server->incarnation());
  EXPECT_GE(status->uptime, absl::ZeroDuration());
}

TEST(PsGrpcServerTest, EachStartHasANewIncarnation) {
  std::unique_ptr<PsGrpcServer> a = StartOnFreePort(0);
  std::unique_ptr<PsGrpcServer> b = StartOnFreePort(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->incarnation(), b->incarnation());
}

TEST(PsGrpcServerTest, ShutdownRpcIsSeenByWaiters) {
  std::unique_ptr<PsGrpcServer> server = StartOnFreePort(0);
  ASSERT_NE(server, nullptr);
  EXPECT_FALSE(server->WaitForShutdownRequest(absl::ZeroDuration()));
  ASSERT_TRUE(ShutdownPsTask(AddressOf(*server), "ps task 0", "end of job",
                             absl::Seconds(10))
                  .ok());
  EXPECT_TRUE(server->WaitForShutdownRequest(absl::Seconds(10)));
  EXPECT_EQ(server->shutdown_reason(), "end of job");
  server->Stop();
  server->Stop();  // idempotent
}

TEST(PsGrpcServerTest, BusyPortIsAClearError) {
  std::unique_ptr<PsGrpcServer> first = StartOnFreePort(0);
  ASSERT_NE(first, nullptr);
  absl::StatusOr<std::unique_ptr<PsGrpcServer>> second =
      PsGrpcServer::Start({AddressOf(*first), 1, absl::Seconds(1)});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(),
            absl::StrCat("cannot listen on ", AddressOf(*first),
                         " (is the port in use, or the host not an address of "
                         "this machine?)"));
}

TEST(PsGrpcServerTest, UnreachableTaskErrorNamesIt) {
  std::unique_ptr<PsGrpcServer> server = StartOnFreePort(0);
  ASSERT_NE(server, nullptr);
  const std::string address = AddressOf(*server);
  server->Stop();
  absl::StatusOr<PsTaskStatus> status =
      GetPsTaskStatus(address, "ps task 0", absl::Milliseconds(500));
  EXPECT_EQ(status.status().code(), absl::StatusCode::kUnavailable)
      << status.status();
  EXPECT_EQ(status.status().message().rfind(
                absl::StrCat("GetStatus to ps task 0 (", address, "): "), 0),
            0u)
      << status.status();
}

}  // namespace
}  // namespace distrt::rpc
