#include "deploy/launcher/launcher.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt::launcher {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

JobPlan TwoPsAChiefAndAWorker() {
  JobPlanOptions options;
  options.counts = JobCounts{2, 1, /*chief=*/true, /*evaluator=*/false};
  absl::StatusOr<JobPlan> plan = MakeJobPlan(options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

TEST(LauncherTest, EveryTaskGetsItsBinaryFlagsAndTfConfig) {
  const JobPlan plan = TwoPsAChiefAndAWorker();
  TaskCommandOptions options;
  options.worker_bin = "/bin/worker";
  options.ps_server_bin = "/bin/ps_server";
  options.bind_host = "::1";
  options.training_flags =
      TrainingFlags({"--model=mlp", "--log_dir=/mine"}, "/job", "::1");
  options.security_args.assign(plan.tasks.size(), {"--cluster_token_file=t"});
  const std::vector<TaskCommand> commands = MakeTaskCommands(plan, options);
  ASSERT_EQ(commands.size(), 4u);

  // ps tasks first: ps_server on the bind host (an IPv6 one in brackets),
  // taking back shards from the job dir's checkpoints.
  EXPECT_EQ(commands[0].task.type, "ps");
  EXPECT_EQ(commands[0].binary, "/bin/ps_server");
  EXPECT_THAT(commands[0].args, ElementsAre("--bind_host=[::1]",
                                            "--checkpoint_dir=/job/checkpoints",
                                            "--cluster_token_file=t"));
  EXPECT_THAT(commands[0].tf_config, HasSubstr("\"type\":\"ps\""));

  // The chief: the user's flags win; the job dir fills in the rest.
  const TaskCommand& chief = commands[2];
  EXPECT_EQ(chief.task.type, "chief");
  EXPECT_EQ(chief.binary, "/bin/worker");
  EXPECT_THAT(chief.args, Contains("--model=mlp"));
  EXPECT_THAT(chief.args, Contains("--log_dir=/mine"));
  EXPECT_THAT(chief.args, Contains("--checkpoint_dir=/job/checkpoints"));
  EXPECT_THAT(chief.args, Contains("--metrics_out=/job/metrics.json"));
  EXPECT_THAT(chief.args, Contains("--bind_host=[::1]"));
  EXPECT_EQ(chief.args.back(), "--cluster_token_file=t");
}

// Kept addresses (an empty bind host): no --bind_host, so that each task
// listens on its own address's host.
TEST(LauncherTest, NoBindHostLeavesEachTaskOnItsOwnAddress) {
  const JobPlan plan = TwoPsAChiefAndAWorker();
  TaskCommandOptions options;
  options.worker_bin = "/bin/worker";
  options.ps_server_bin = "/bin/ps_server";
  options.training_flags = TrainingFlags({"--model=mlp"}, "/job", "");
  options.security_args.assign(plan.tasks.size(), {});
  const std::vector<TaskCommand> commands = MakeTaskCommands(plan, options);
  ASSERT_EQ(commands.size(), 4u);
  for (const TaskCommand& command : commands) {
    for (const std::string& arg : command.args) {
      EXPECT_THAT(arg, Not(HasSubstr("--bind_host"))) << command.task.label();
    }
  }
  EXPECT_THAT(commands[0].args,
              ElementsAre("--checkpoint_dir=/job/checkpoints"));
}

TEST(LauncherTest, ListenHostBracketsBareIpv6) {
  EXPECT_EQ(ListenHost("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(ListenHost("::"), "[::]");
  EXPECT_EQ(ListenHost("[::1]"), "[::1]");
}

TEST(LauncherTest, ABinaryThatIsNotThereNamesTheFlag) {
  absl::StatusOr<std::string> found =
      FindTaskBinary("worker_bin", "/nonexistent/worker", "worker/worker");
  EXPECT_EQ(found.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(found.status().message(), HasSubstr("--worker_bin"));
}

}  // namespace
}  // namespace distrt::launcher
