#include "job/worker_group.h"

#include "absl/strings/str_cat.h"
#include "deploy/launcher/free_ports.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// A chief and a worker on ports nobody else listens on.
TfConfig ChiefAndWorker(const std::string& type) {
  absl::StatusOr<std::vector<int>> ports =
      launcher::PickFreePorts("127.0.0.1", 2);
  EXPECT_TRUE(ports.ok()) << ports.status();
  TfConfig config;
  config.cluster = *ClusterSpec::Create(
      {{"chief", {{0, absl::StrCat("127.0.0.1:", (*ports)[0])}}},
       {"worker", {{0, absl::StrCat("127.0.0.1:", (*ports)[1])}}}});
  config.task = TaskId{type, 0};
  return config;
}

// A task whose peers never come: the wait ends at join_timeout with an
// error naming the tasks (before, building that message crashed).
TEST(WorkerGroupTest, ATaskAloneGivesUpAtTheJoinTimeoutNamingTheTasks) {
  WorkerGroup::Options options;
  options.join_timeout = absl::Seconds(1);
  for (const std::string type : {"worker", "chief"}) {
    absl::StatusOr<std::unique_ptr<WorkerGroup>> group =
        WorkerGroup::Join(ChiefAndWorker(type), options);
    ASSERT_FALSE(group.ok()) << type;
    EXPECT_THAT(group.status().message(),
                HasSubstr(absl::StrCat(type,
                                       ":0 could not join the 2 "
                                       "training tasks (chief:0, worker:0) "
                                       "within 1s (--wait_secs)")));
  }
}

}  // namespace
}  // namespace distrt
