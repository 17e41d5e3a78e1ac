// PsClient with Options::data_plane against real ps_server processes whose
// TF_CONFIG says "rpc_layer": "grpc+tcp". To prove that the tensors really
// travel over the TCP data plane, the client reaches each task's gRPC
// through a proxy that refuses every tensor RPC: a step's reads and
// updates can only succeed over the data plane, while GetStatus and the
// variables' creation pass through the proxy.

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/data_plane_connection.h"
#include "rpc/ps_methods.h"
#include "tests/util/constant_variable_spec.h"
#include "tests/util/log_lines.h"
#include "tests/util/ps_processes.h"
#include "tests/util/refusing_proxy.h"
#include "tests/util/step_requests.h"

namespace distrt {
namespace {

using ::distrt::testing::PsProcess;
using ::distrt::testing::ReadStep;
using ::distrt::testing::RefusingProxy;
using ::distrt::testing::StartPsProcess;
using ::distrt::testing::StartPsProcesses;
using ::distrt::testing::UpdateStep;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(30);

bool IsTensorRpc(absl::string_view method) {
  for (const char* rpc :
       {"/PullDense", "/PushDense", "/PullDenseBatch", "/PushDenseBatch",
        "/PullSparse", "/PushSparse", "/PullHash", "/PushHash", "/Bundle"}) {
    if (absl::EndsWith(method, rpc)) return true;
  }
  return false;
}

using ::distrt::testing::ConstantVariableSpec;

// What the client logs, for the lines that say which transport a task got.
using Log = ::distrt::testing::LogLines;

std::unique_ptr<PsClient> DataPlaneClient(std::vector<std::string> addresses,
                                          Log& log,
                                          int64_t max_request_bytes = 0) {
  PsClient::Options options;
  options.rpc_timeout = kWait;
  options.data_plane = true;
  options.log = log.Sink();
  if (max_request_bytes > 0) options.max_request_bytes = max_request_bytes;
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(std::move(addresses), options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(DataPlaneIntegrationTest, EveryTensorRpcGoesOverTheDataPlane) {
  absl::StatusOr<std::vector<PsProcess>> tasks =
      StartPsProcesses(2, {}, "grpc+tcp");
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::vector<std::unique_ptr<RefusingProxy>> proxies;
  std::vector<std::string> addresses;
  for (const PsProcess& task : *tasks) {
    EXPECT_GT(task.data_plane_port, 0);
    absl::StatusOr<std::unique_ptr<RefusingProxy>> proxy =
        RefusingProxy::Start(task.address(), IsTensorRpc);
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    addresses.push_back((*proxy)->address());
    proxies.push_back(*std::move(proxy));
  }
  Log log;
  // Small requests: a large variable's pull and push become several
  // requests, more than are sent at once.
  std::unique_ptr<PsClient> client =
      DataPlaneClient(addresses, log, /*max_request_bytes=*/64 << 10);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForServers(kWait).ok());
  EXPECT_EQ(log.Count("tensors over its TCP data plane"), 2) << log.All();

  const VariablePlacement b =
      *client->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  const VariablePlacement emb =
      *client->CreateVariable(ConstantVariableSpec("emb", {10, 1}, 0.0f),
                              PartitionPolicy::FixedShards(2));
  const VariablePlacement big =
      *client->CreateVariable(ConstantVariableSpec("big", {1000, 256}, 2.0f),
                              PartitionPolicy::FixedShards(2));

  // A whole large variable, in many requests both ways.
  std::vector<float> big_now(1000 * 256);
  ASSERT_TRUE(client->Pull(big, absl::MakeSpan(big_now)).ok());
  EXPECT_THAT(big_now, Each(2.0f));
  ASSERT_TRUE(client->Push(big, std::vector<float>(1000 * 256, 0.5f)).ok());
  ASSERT_TRUE(client->Pull(big, absl::MakeSpan(big_now)).ok());
  EXPECT_THAT(big_now, Each(1.5f));

  // A step's round: small dense and rows by id, bundled per task.
  const std::vector<int64_t> ids = {9, 2, 9};
  ASSERT_TRUE(UpdateStep(*client, {{&b, std::vector<float>{0.5f, -0.5f}}},
                         {{&emb, ids, std::vector<float>{1, 2, 4}}}, {})
                  .ok());
  std::vector<float> b_now(2), rows(3);
  ASSERT_TRUE(ReadStep(*client, {{&b, absl::MakeSpan(b_now)}},
                       {{&emb, ids, absl::MakeSpan(rows)}})
                  .ok());
  EXPECT_THAT(b_now, ElementsAre(0.5f, 1.5f));
  EXPECT_THAT(rows, ElementsAre(-5.0f, -2.0f, -5.0f));

  // Hash tables' rows.
  HashEmbeddingSpec table;
  table.name = "user_emb";
  table.dim = 4;
  table.initializer.kind = InitializerSpec::Kind::kConstant;
  table.initializer.value = 1.0f;
  table.optimizer.learning_rate = 1.0f;
  ASSERT_TRUE(client->CreateHashTable(table).ok());
  ASSERT_TRUE(
      client->PushHash(table, {17, 17}, std::vector<float>(8, 1.0f)).ok());
  std::vector<float> row(4);
  ASSERT_TRUE(client->PullHash(table, {17}, absl::MakeSpan(row)).ok());
  EXPECT_THAT(row, Each(-1.0f));

  // Not one tensor RPC reached the proxies; the tasks counted them.
  for (const auto& proxy : proxies) EXPECT_EQ(proxy->refused(), 0);
  absl::StatusOr<std::vector<ps::GetStatusResponse>> stats = client->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  int64_t pushes = 0;
  for (const ps::GetStatusResponse& task : *stats) {
    EXPECT_GT(task.data_plane_port(), 0);
    const auto it = task.requests().find("PushDense");
    if (it != task.requests().end()) pushes += it->second;
  }
  // 1000 x 256 floats in 64 KiB requests: at least 16.
  EXPECT_GE(pushes, 16);
}

// Over the data plane a request is cut at data_plane_max_request_bytes
// (512 KiB by default), over gRPC at max_request_bytes (2 MiB).
TEST(DataPlaneIntegrationTest, RequestsOverTheDataPlaneAreCutSmaller) {
  absl::StatusOr<PsProcess> task = StartPsProcess(0, 1, {}, "grpc+tcp");
  ASSERT_TRUE(task.ok()) << task.status();
  Log log;
  PsClient::Options options;
  options.rpc_timeout = kWait;
  options.log = log.Sink();
  absl::StatusOr<std::unique_ptr<PsClient>> over_grpc =
      PsClient::Create({task->address()}, options);
  ASSERT_TRUE(over_grpc.ok()) << over_grpc.status();
  options.data_plane = true;
  absl::StatusOr<std::unique_ptr<PsClient>> over_data_plane =
      PsClient::Create({task->address()}, options);
  ASSERT_TRUE(over_data_plane.ok()) << over_data_plane.status();
  ASSERT_TRUE((*over_grpc)->WaitForServers(kWait).ok());
  ASSERT_TRUE((*over_data_plane)->WaitForServers(kWait).ok());
  // The smaller cut applies to both paths; the log tells that the second
  // client's tensors do take the data plane.
  EXPECT_EQ(log.Count("tensors over its TCP data plane"), 1) << log.All();
  // 1,024,000 bytes: one gRPC request, two over the data plane.
  const VariablePlacement v =
      *(*over_grpc)
           ->CreateVariable(ConstantVariableSpec("v", {1000, 256}, 0.0f));
  const auto pushes = [&]() -> int64_t {
    absl::StatusOr<std::vector<ps::GetStatusResponse>> stats =
        (*over_grpc)->Stats();
    if (!stats.ok()) return -1;
    const auto it = (*stats)[0].requests().find("PushDense");
    return it == (*stats)[0].requests().end() ? 0 : it->second;
  };
  const std::vector<float> grad(1000 * 256, 1.0f);
  ASSERT_TRUE((*over_grpc)->Push(v, grad).ok());
  EXPECT_EQ(pushes(), 1);
  ASSERT_TRUE((*over_data_plane)->Push(v, grad).ok());
  EXPECT_EQ(pushes(), 3);
  std::vector<float> now(1000 * 256);
  ASSERT_TRUE((*over_data_plane)->Pull(v, absl::MakeSpan(now)).ok());
  EXPECT_THAT(now, Each(-2.0f));
}

TEST(DataPlaneIntegrationTest, ATaskWithoutADataPlaneIsReachedOverGrpc) {
  absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(1);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  EXPECT_EQ((*tasks)[0].data_plane_port, 0);
  Log log;
  std::unique_ptr<PsClient> client =
      DataPlaneClient({(*tasks)[0].address()}, log);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForServers(kWait).ok());
  EXPECT_EQ(log.Count("offers no TCP data plane"), 1) << log.All();
  const VariablePlacement b =
      *client->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  ASSERT_TRUE(client->Push(b, std::vector<float>{1.0f, 2.0f}).ok());
  std::vector<float> b_now(2);
  ASSERT_TRUE(client->Pull(b, absl::MakeSpan(b_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(0.0f, -1.0f));
}

// A ps task restarted on the same gRPC port gets a new data plane port:
// the client's connections and the port it knew fail, and the task's
// tensors go back to gRPC (said once), without an error for the caller,
// until the client learns the new port.
TEST(DataPlaneIntegrationTest, ARestartedTaskIsReachedOverGrpcAfterward) {
  absl::StatusOr<PsProcess> first = StartPsProcess(0, 1, {}, "grpc+tcp");
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = first->port;
  const int first_data_plane = first->data_plane_port;
  Log log;
  std::unique_ptr<PsClient> client = DataPlaneClient({first->address()}, log);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForServers(kWait).ok());
  VariablePlacement b =
      *client->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  std::vector<float> b_now(2);
  ASSERT_TRUE(client->Pull(b, absl::MakeSpan(b_now)).ok());

  *first = PsProcess();  // killed
  absl::StatusOr<PsProcess> second =
      StartPsProcess(0, 1, {absl::StrCat("--port=", port)}, "grpc+tcp");
  ASSERT_TRUE(second.ok()) << second.status();
  if (second->data_plane_port == first_data_plane) {
    GTEST_SKIP() << "the OS gave the new data plane the old port";
  }
  b = *client->CreateVariable(ConstantVariableSpec("b", {2}, 3.0f));
  ASSERT_TRUE(client->Pull(b, absl::MakeSpan(b_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(3.0f, 3.0f));
  EXPECT_EQ(log.Count("its tensors go over gRPC until it is asked again"), 1)
      << log.All();
  // Asked again (as OverDataPlane does every few seconds), the task gives
  // its new data plane, which the calls use from then on.
  ASSERT_TRUE(client->WaitForServers(kWait).ok());
  EXPECT_EQ(log.Count(absl::StrCat(": tensors over its TCP data plane at port ",
                                   second->data_plane_port)),
            1)
      << log.All();
  ASSERT_TRUE(client->Push(b, std::vector<float>{1.0f, 1.0f}).ok());
  ASSERT_TRUE(client->Pull(b, absl::MakeSpan(b_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(2.0f, 2.0f));
}

// The same restart under an operation of many pieces, more than are in
// flight at once: the pieces whose pooled connections died, and those that
// then find no data plane at all, each make room for the next, so every
// piece still goes (over gRPC) and the pull is whole.
TEST(DataPlaneIntegrationTest,
     EveryPieceGoesWhenARestartedTasksConnectionsFail) {
  absl::StatusOr<PsProcess> first = StartPsProcess(0, 1, {}, "grpc+tcp");
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = first->port;
  const int first_data_plane = first->data_plane_port;
  Log log;
  PsClient::Options options;
  options.rpc_timeout = kWait;
  options.data_plane = true;
  options.log = log.Sink();
  // 40 pieces of 1024 floats, 8 at a time: 8 pooled connections to die.
  options.max_request_bytes = 4096;
  options.max_requests_in_flight = 8;
  options.max_requests_in_flight_per_task = 8;
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create({first->address()}, options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->WaitForServers(kWait).ok());
  constexpr int64_t kRows = 40;
  VariablePlacement v = *(*client)->CreateVariable(
      ConstantVariableSpec("v", {kRows, 1024}, 1.0f));
  std::vector<float> now(kRows * 1024);
  ASSERT_TRUE((*client)->Pull(v, absl::MakeSpan(now)).ok());
  ASSERT_THAT(now, Each(1.0f));

  *first = PsProcess();  // killed
  absl::StatusOr<PsProcess> second =
      StartPsProcess(0, 1, {absl::StrCat("--port=", port)}, "grpc+tcp");
  ASSERT_TRUE(second.ok()) << second.status();
  if (second->data_plane_port == first_data_plane) {
    GTEST_SKIP() << "the OS gave the new data plane the old port";
  }
  v = *(*client)->CreateVariable(
      ConstantVariableSpec("v", {kRows, 1024}, 3.0f));
  ASSERT_TRUE((*client)->Pull(v, absl::MakeSpan(now)).ok());
  EXPECT_THAT(now, Each(3.0f));
  ASSERT_TRUE((*client)->Push(v, std::vector<float>(kRows * 1024, 1.0f)).ok());
  ASSERT_TRUE((*client)->Pull(v, absl::MakeSpan(now)).ok());
  EXPECT_THAT(now, Each(2.0f));
}

// What no PsClient sends, sent to a real ps_server's data plane: an RPC it
// does not carry there, a method number past the last, and a PushDense
// whose bytes are not one. Each is answered with INVALID_ARGUMENT on the
// same connection, which goes on serving.
TEST(DataPlaneIntegrationTest, BadRequestsAreAnsweredAndTheTaskGoesOn) {
  absl::StatusOr<PsProcess> task = StartPsProcess(0, 1, {}, "grpc+tcp");
  ASSERT_TRUE(task.ok()) << task.status();
  absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> c =
      rpc::DataPlaneConnection::Connect(
          "127.0.0.1", task->data_plane_port,
          {0, std::stoull(task->incarnation, nullptr, 16)},
          absl::Now() + kWait);
  ASSERT_TRUE(c.ok()) << c.status();
  const grpc::Slice garbage(std::string("\xff\xff\xff\x01garbage"));
  const struct {
    int method;
    const char* says;
  } cases[] = {{rpc::kGetStatus, "the TCP data plane carries PullDense"},
               {1000, "not method number 1000"},
               {rpc::kPushDense, "PushDense request"}};
  for (const auto& bad : cases) {
    ASSERT_TRUE((*c)->Send(bad.method, grpc::ByteBuffer(&garbage, 1),
                           absl::Now() + kWait)
                    .ok());
    grpc::Status status;
    grpc::ByteBuffer response;
    ASSERT_TRUE((*c)->Receive(absl::Now() + kWait, &status, &response).ok());
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << bad.method;
    EXPECT_THAT(status.error_message(), HasSubstr(bad.says));
  }
  Log log;
  std::unique_ptr<PsClient> client = DataPlaneClient({task->address()}, log);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForServers(kWait).ok());
  const VariablePlacement b =
      *client->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  std::vector<float> b_now(2);
  ASSERT_TRUE(client->Pull(b, absl::MakeSpan(b_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(1.0f, 1.0f));
}

}  // namespace
}  // namespace distrt
