#include "job/ps_coordination.h"

#include <memory>
#include <thread>

#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/in_process_ps_tasks.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// The chief and a worker reach the same two ps tasks: as two PsClients of
// ps servers over gRPC, or as one InMemoryParameterServers (the handshake
// needs nothing but the ParameterServers interface).
enum class Transport { kGrpc, kInMemory };

class PsCoordinationTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (GetParam() == Transport::kInMemory) {
      in_memory_ = *InMemoryParameterServers::Create(2);
      chief_ps_ = worker_ps_ = in_memory_.get();
      return;
    }
    absl::StatusOr<rpc::InProcessPsTasks> tasks = rpc::StartInProcessPsTasks(2);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    ps_ = *std::move(tasks);
    chief_client_ = *PsClient::Create(ps_.addresses, PsClient::Options());
    worker_client_ = *PsClient::Create(ps_.addresses, PsClient::Options());
    chief_ps_ = chief_client_.get();
    worker_ps_ = worker_client_.get();
  }
  void TearDown() override {
    for (auto& server : ps_.servers) server->Stop();
  }
  PsCoordination::Options Waiting(absl::Duration wait) {
    PsCoordination::Options options;
    options.wait = wait;
    options.wait_flag = "--wait_secs";
    return options;
  }

  rpc::InProcessPsTasks ps_;
  std::unique_ptr<PsClient> chief_client_, worker_client_;
  std::unique_ptr<InMemoryParameterServers> in_memory_;
  ParameterServers* chief_ps_ = nullptr;
  ParameterServers* worker_ps_ = nullptr;
};

TEST_P(PsCoordinationTest, WorkersWaitForTheChiefAndTheChiefForThem) {
  PsCoordination chief(chief_ps_, Waiting(absl::Seconds(20)));
  PsCoordination worker(worker_ps_, Waiting(absl::Seconds(20)));
  // The worker starts waiting first; the chief announces a little later.
  absl::Status waited;
  std::thread waiting([&] { waited = worker.WaitForChiefReady(); });
  ASSERT_TRUE(chief.AnnounceChiefReady().ok());
  waiting.join();
  EXPECT_TRUE(waited.ok()) << waited;

  std::thread done([&] { EXPECT_TRUE(worker.ReportWorkerDone().ok()); });
  EXPECT_TRUE(chief.WaitForWorkersDone(1).ok());
  done.join();
}

TEST_P(PsCoordinationTest, WaitsAreBoundedAndSayWhatTheyWaitedFor) {
  PsCoordination worker(worker_ps_, Waiting(absl::Milliseconds(300)));
  absl::Status s = worker.WaitForChiefReady();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("the chief to create the variables"));
  EXPECT_THAT(s.message(), HasSubstr("(--wait_secs)"));

  PsCoordination chief(chief_ps_, Waiting(absl::Milliseconds(300)));
  ASSERT_TRUE(chief.AnnounceChiefReady().ok());
  s = chief.WaitForWorkersDone(2);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("2 worker(s) to finish"));
}

INSTANTIATE_TEST_SUITE_P(Transports, PsCoordinationTest,
                         ::testing::Values(Transport::kGrpc,
                                           Transport::kInMemory),
                         [](const ::testing::TestParamInfo<Transport>& info) {
                           return info.param == Transport::kGrpc ? "Grpc"
                                                                 : "InMemory";
                         });

}  // namespace
}  // namespace distrt
