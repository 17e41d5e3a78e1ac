#include "distribute/ps_coordination.h"

#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/in_process_ps_tasks.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

class PsCoordinationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<rpc::InProcessPsTasks> tasks = rpc::StartInProcessPsTasks(2);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    ps_ = *std::move(tasks);
    chief_client_ = *PsClient::Create(ps_.addresses, PsClient::Options());
    worker_client_ = *PsClient::Create(ps_.addresses, PsClient::Options());
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
};

TEST_F(PsCoordinationTest, WorkersWaitForTheChiefAndTheChiefForThem) {
  PsCoordination chief(chief_client_.get(), Waiting(absl::Seconds(20)));
  PsCoordination worker(worker_client_.get(), Waiting(absl::Seconds(20)));
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

TEST_F(PsCoordinationTest, WaitsAreBoundedAndSayWhatTheyWaitedFor) {
  PsCoordination worker(worker_client_.get(), Waiting(absl::Milliseconds(300)));
  absl::Status s = worker.WaitForChiefReady();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("the chief to create the variables"));
  EXPECT_THAT(s.message(), HasSubstr("(--wait_secs)"));

  PsCoordination chief(chief_client_.get(), Waiting(absl::Milliseconds(300)));
  ASSERT_TRUE(chief.AnnounceChiefReady().ok());
  s = chief.WaitForWorkersDone(2);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("2 worker(s) to finish"));
}

}  // namespace
}  // namespace distrt
