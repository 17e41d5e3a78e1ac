#include "rpc/ps_grpc_server.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/ps_admin_client.h"
#include "rpc/tensor_codec.h"

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

// Each RPC, sent as a plain protobuf message with the generated stub (as
// any client in any language would), reaches its own handler and is counted
// under its own name: the server's table of methods matches the service's
// definition, including the methods served as raw bytes.
TEST(PsGrpcServerTest, EveryRpcReachesItsOwnHandler) {
  std::unique_ptr<PsGrpcServer> server = StartOnFreePort(0);
  ASSERT_NE(server, nullptr);
  auto stub = ps::ParameterServer::NewStub(grpc::CreateChannel(
      AddressOf(*server), grpc::InsecureChannelCredentials()));
  const auto call = [](auto method) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    return method(&context);
  };

  ps::CreateVariableRequest create;
  create.mutable_spec()->set_name("w");
  create.mutable_spec()->set_dtype(ps::FLOAT32);
  create.mutable_spec()->add_shape(4);
  create.mutable_spec()->add_shape(2);
  create.mutable_spec()->mutable_optimizer()->set_learning_rate(1.0f);
  ps::VariableInfo info;
  grpc::Status status = call([&](grpc::ClientContext* c) {
    return stub->CreateVariable(c, create, &info);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();

  ps::PushDenseRequest push;
  push.set_name("w");
  EncodeFloat32({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, push.mutable_values());
  ps::PushDenseResponse pushed;
  status = call([&](grpc::ClientContext* c) {
    return stub->PushDense(c, push, &pushed);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();

  ps::PullDenseRequest pull;
  pull.set_name("w");
  ps::PullDenseResponse pulled;
  status = call([&](grpc::ClientContext* c) {
    return stub->PullDense(c, pull, &pulled);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<float> scratch;
  absl::StatusOr<absl::Span<const float>> values =
      Float32Elements(ViewOf(pulled.values()), "w", &scratch);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(std::vector<float>(values->begin(), values->end()),
            std::vector<float>({-1, -2, -3, -4, -5, -6, -7, -8}));

  // A batch: the same variable twice (rows 0-1, then 3), pushed then
  // pulled; each item as its single-variable RPC would do it.
  ps::PushDenseBatchRequest push_batch;
  ps::PushDenseRequest* first = push_batch.add_pushes();
  first->set_name("w");
  first->mutable_rows()->set_begin(0);
  first->mutable_rows()->set_end(2);
  EncodeFloat32({1, 1, 1, 1}, {2, 2}, first->mutable_values());
  ps::PushDenseRequest* second = push_batch.add_pushes();
  second->set_name("w");
  second->mutable_rows()->set_begin(3);
  second->mutable_rows()->set_end(4);
  EncodeFloat32({2, 2}, {1, 2}, second->mutable_values());
  ps::PushDenseBatchResponse batch_pushed;
  status = call([&](grpc::ClientContext* c) {
    return stub->PushDenseBatch(c, push_batch, &batch_pushed);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ps::PullDenseBatchRequest pull_batch;
  *pull_batch.add_pulls() = pull;
  pull_batch.add_pulls()->set_name("w");
  pull_batch.mutable_pulls(1)->mutable_rows()->set_begin(3);
  pull_batch.mutable_pulls(1)->mutable_rows()->set_end(4);
  ps::PullDenseBatchResponse batch_pulled;
  status = call([&](grpc::ClientContext* c) {
    return stub->PullDenseBatch(c, pull_batch, &batch_pulled);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(batch_pulled.pulls_size(), 2);
  values =
      Float32Elements(ViewOf(batch_pulled.pulls(0).values()), "w", &scratch);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(std::vector<float>(values->begin(), values->end()),
            std::vector<float>({-2, -3, -4, -5, -5, -6, -9, -10}));
  values =
      Float32Elements(ViewOf(batch_pulled.pulls(1).values()), "w", &scratch);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(std::vector<float>(values->begin(), values->end()),
            std::vector<float>({-9, -10}));

  // A batch item that fails names its variable.
  ps::PullDenseBatchRequest bad_batch;
  bad_batch.add_pulls()->set_name("nope");
  status = call([&](grpc::ClientContext* c) {
    return stub->PullDenseBatch(c, bad_batch, &batch_pulled);
  });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("\"nope\""), std::string::npos)
      << status.error_message();

  ps::PullSparseRequest pull_sparse;
  pull_sparse.set_name("w");
  EncodeInt64({2}, {1}, pull_sparse.mutable_ids());
  ps::PullSparseResponse sparse_pulled;
  status = call([&](grpc::ClientContext* c) {
    return stub->PullSparse(c, pull_sparse, &sparse_pulled);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  values = Float32Elements(ViewOf(sparse_pulled.values()), "w", &scratch);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(std::vector<float>(values->begin(), values->end()),
            std::vector<float>({-5, -6}));

  ps::PushSparseRequest push_sparse;
  push_sparse.set_name("w");
  EncodeInt64({2}, {1}, push_sparse.mutable_ids());
  EncodeFloat32({1, 1}, {1, 2}, push_sparse.mutable_gradients());
  ps::PushSparseResponse sparse_pushed;
  status = call([&](grpc::ClientContext* c) {
    return stub->PushSparse(c, push_sparse, &sparse_pushed);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();

  ps::GetStatusResponse task;
  status = call([&](grpc::ClientContext* c) {
    return stub->GetStatus(c, ps::GetStatusRequest(), &task);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  const std::map<std::string, int64_t> counts(task.requests().begin(),
                                              task.requests().end());
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"GetStatus", 1},
                                                    {"CreateVariable", 1},
                                                    {"PushDense", 1},
                                                    {"PullDense", 1},
                                                    {"PushDenseBatch", 1},
                                                    {"PullDenseBatch", 2},
                                                    {"PullSparse", 1},
                                                    {"PushSparse", 1}}));
  EXPECT_EQ(task.failed_requests(), 1);
}

}  // namespace
}  // namespace distrt::rpc
