#include "deploy/launcher/job_runner.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Tasks are small shell scripts that stand in for ps_server and worker. Where
// a test needs one task to act only after another has, they meet at a FIFO
// (opening it blocks until both ends are open), never at a sleep.
class JobRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/job_runner_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    out_ = open_memstream(&out_buffer_, &out_size_);
    ASSERT_NE(out_, nullptr);
    fifo_ = dir_ + "/meet";
    ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
    ASSERT_EQ(pipe(interrupt_pipe_), 0);
  }

  void TearDown() override {
    std::fclose(out_);
    free(out_buffer_);
    close(interrupt_pipe_[0]);
    close(interrupt_pipe_[1]);
  }

  std::string WriteScript(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }

  // Commands for `counts`: ps tasks run `ps_script`, the others
  // `worker_script`, each with the FIFO's path as its argument.
  std::vector<TaskCommand> Commands(const JobPlan& plan,
                                    const std::string& ps_script,
                                    const std::string& worker_script) {
    std::vector<TaskCommand> commands;
    for (const LaunchTask& task : plan.tasks) {
      commands.push_back({task,
                          task.type == kPsJob ? ps_script : worker_script,
                          {fifo_},
                          TfConfigText(plan.cluster, task)});
    }
    return commands;
  }

  JobPlan Plan(int num_ps, int num_workers, bool chief) {
    JobPlanOptions options;
    options.counts = JobCounts{num_ps, num_workers, chief, false};
    absl::StatusOr<JobPlan> plan = MakeJobPlan(options);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return *plan;
  }

  JobRunnerOptions Options() {
    JobRunnerOptions options;
    options.finish_grace = absl::Seconds(30);
    options.stop_timeout = absl::Seconds(10);
    options.poll_interval = absl::Milliseconds(50);
    options.log_dir = dir_;
    options.out = out_;
    options.interrupt_fd = interrupt_pipe_[0];
    return options;
  }

  std::string Output() {
    std::fflush(out_);
    return std::string(out_buffer_, out_size_);
  }

  std::string ReadLog(const std::string& stem) {
    std::ifstream in(dir_ + "/" + stem + ".log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static void ExpectAllGone(const JobRunner& runner) {
    for (const JobRunner::StartedTask& task : runner.started()) {
      EXPECT_EQ(kill(task.pid, 0), -1) << task.task.label() << " survived";
      EXPECT_EQ(errno, ESRCH);
    }
  }

  std::string dir_;
  std::string fifo_;
  FILE* out_ = nullptr;
  char* out_buffer_ = nullptr;
  size_t out_size_ = 0;
  int interrupt_pipe_[2] = {-1, -1};
};

// Waits in the background so that the trap runs as soon as SIGTERM comes.
constexpr char kWaitForever[] = "sleep 1000 & wait";

TEST_F(JobRunnerTest, SucceedsWhenThePrimaryFinishesAndStopsStragglers) {
  // The ps task is ready (its trap set) before the chief finishes; it does
  // not exit by itself, so the grace period ends and it is stopped.
  const std::string ps = WriteScript(
      "ps.sh", absl::StrCat("trap 'echo ps stopping; exit 0' TERM\n",
                            "echo \"ps up $*\"\n", "echo ready > \"$1\"\n",
                            kWaitForever));
  const std::string worker =
      // One write, so that the last partial line comes with the line before.
      WriteScript("worker.sh",
                  "read ready < \"$1\"\n"
                  "printf 'chief got %s\\nno newline' \"$ready\"\nexit 0");
  JobPlan plan = Plan(1, 0, true);
  JobRunnerOptions options = Options();
  options.finish_grace = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(Commands(plan, ps, worker), plan.primary, options);
  ASSERT_TRUE(runner.ok()) << runner.status();
  ASSERT_EQ((*runner)->started().size(), 2u);
  EXPECT_EQ((*runner)->started()[0].task.label(), "ps:0");

  const JobResult result = (*runner)->Wait();
  const std::string out = Output();
  EXPECT_EQ(result.outcome, JobResult::Outcome::kSucceeded) << out;
  EXPECT_THAT(result.summary, StartsWith("chief:0 exited 0 after "));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("launch: started ps:0 at ",
                                          plan.tasks[0].address, " (pid ")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("[ps:0] ps up ", fifo_, "\n")));
  // The last partial line is neither lost nor put before earlier lines.
  EXPECT_THAT(out, HasSubstr("[chief:0] chief got ready\n"
                             "[chief:0] no newline\n"));
  EXPECT_THAT(out, HasSubstr("launch: ps:0 still running 0.2s after chief:0 "
                             "finished; stopping it\n"));
  EXPECT_THAT(out, HasSubstr("[ps:0] ps stopping\n"));
  EXPECT_THAT(out, HasSubstr("launch: ps:0 stopped (exited with status 0)"));
  // Logs are the raw output, without prefixes.
  EXPECT_EQ(ReadLog("ps-0"), absl::StrCat("ps up ", fifo_, "\nps stopping\n"));
  EXPECT_EQ(ReadLog("chief-0"), "chief got ready\nno newline");
  ExpectAllGone(**runner);
}

TEST_F(JobRunnerTest, AFailingTaskStopsTheJob) {
  const std::string ps = WriteScript("ps.sh", kWaitForever);
  const std::string worker = WriteScript(
      "worker.sh",
      absl::StrCat("case \"$TF_CONFIG\" in\n",
                   "  *'\"task\":{\"type\":\"worker\",\"index\":1}'*)\n",
                   "    echo 'bad flag' >&2; exit 3 ;;\n", "esac\n",
                   kWaitForever));
  JobPlan plan = Plan(2, 2, true);
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(Commands(plan, ps, worker), plan.primary, Options());
  ASSERT_TRUE(runner.ok()) << runner.status();

  const JobResult result = (*runner)->Wait();
  const std::string out = Output();
  EXPECT_EQ(result.outcome, JobResult::Outcome::kFailed) << out;
  EXPECT_EQ(result.summary, "worker:1 exited with status 3");
  EXPECT_THAT(out, HasSubstr("[worker:1] bad flag\n"
                             "launch: worker:1 exited with status 3; "
                             "stopping the job\n"));
  EXPECT_THAT(out, HasSubstr("launch: chief:0 stopped ("));
  EXPECT_THAT(out, HasSubstr("launch: ps:1 stopped ("));
  ExpectAllGone(**runner);
}

TEST_F(JobRunnerTest, AnInterruptStopsTheJob) {
  const std::string ps = WriteScript("ps.sh", kWaitForever);
  JobPlan plan = Plan(1, 1, false);
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(Commands(plan, ps, ps), plan.primary, Options());
  ASSERT_TRUE(runner.ok()) << runner.status();
  const unsigned char sigint = SIGINT;
  ASSERT_EQ(write(interrupt_pipe_[1], &sigint, 1), 1);

  const JobResult result = (*runner)->Wait();
  const std::string out = Output();
  EXPECT_EQ(result.outcome, JobResult::Outcome::kInterrupted) << out;
  EXPECT_EQ(result.signal, SIGINT);
  EXPECT_EQ(result.summary, "interrupted by SIGINT");
  EXPECT_THAT(out, HasSubstr("launch: interrupted; stopping the job\n"));
  EXPECT_THAT(out, HasSubstr("launch: worker:0 stopped (killed by signal 15 "
                             "(SIGTERM))"));
  ExpectAllGone(**runner);
}

TEST_F(JobRunnerTest, TasksThatIgnoreSigtermAreKilled) {
  // The ps task ignores SIGTERM; it tells the worker so, and the worker
  // then fails, which stops the job.
  const std::string ps = WriteScript(
      "ps.sh",
      absl::StrCat("trap '' TERM\necho ready > \"$1\"\n", kWaitForever));
  const std::string worker =
      WriteScript("worker.sh", "read ready < \"$1\"\nexit 1");
  JobPlan plan = Plan(1, 1, false);
  JobRunnerOptions options = Options();
  options.stop_timeout = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(Commands(plan, ps, worker), plan.primary, options);
  ASSERT_TRUE(runner.ok()) << runner.status();

  const JobResult result = (*runner)->Wait();
  const std::string out = Output();
  EXPECT_EQ(result.outcome, JobResult::Outcome::kFailed) << out;
  EXPECT_EQ(result.summary, "worker:0 exited with status 1");
  EXPECT_THAT(out, HasSubstr("launch: ps:0 did not stop after SIGTERM; "
                             "sending SIGKILL\n"));
  EXPECT_THAT(out, HasSubstr("launch: ps:0 stopped (killed by signal 9 "
                             "(SIGKILL))"));
  ExpectAllGone(**runner);
}

TEST_F(JobRunnerTest, ASecondInterruptKillsAtOnce) {
  const std::string stubborn = WriteScript(
      "stubborn.sh",
      absl::StrCat("trap '' TERM\necho ready > \"$1\"\n", kWaitForever));
  JobPlan plan = Plan(0, 1, false);
  JobRunnerOptions options = Options();
  options.stop_timeout = absl::Seconds(600);
  absl::StatusOr<std::unique_ptr<JobRunner>> runner = JobRunner::Start(
      Commands(plan, stubborn, stubborn), plan.primary, options);
  ASSERT_TRUE(runner.ok()) << runner.status();
  // The task ignores SIGTERM once it has written to the FIFO.
  std::ifstream(fifo_).ignore();
  const unsigned char twice[2] = {SIGINT, SIGINT};
  ASSERT_EQ(write(interrupt_pipe_[1], twice, 2), 2);

  const absl::Time start = absl::Now();
  const JobResult result = (*runner)->Wait();
  const std::string out = Output();
  EXPECT_EQ(result.outcome, JobResult::Outcome::kInterrupted) << out;
  EXPECT_THAT(out, HasSubstr("launch: worker:0 stopped (killed by signal 9 "
                             "(SIGKILL))"));
  // Far below stop_timeout: the second interrupt did not wait for it.
  EXPECT_LT(absl::Now() - start, absl::Seconds(60));
  ExpectAllGone(**runner);
}

TEST_F(JobRunnerTest, WorkersExitingZeroBeforeThePrimaryIsFine) {
  // worker:0 is primary (no chief); worker:1 finishes first.
  const std::string worker =
      WriteScript("worker.sh",
                  "case \"$TF_CONFIG\" in\n"
                  "  *'\"index\":1}'*) echo done > \"$1\"; exit 0 ;;\n"
                  "esac\n"
                  "read done < \"$1\"\nexit 0");
  JobPlan plan = Plan(0, 2, false);
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(Commands(plan, worker, worker), plan.primary, Options());
  ASSERT_TRUE(runner.ok()) << runner.status();
  const JobResult result = (*runner)->Wait();
  const std::string out = Output();
  EXPECT_EQ(result.outcome, JobResult::Outcome::kSucceeded) << out;
  EXPECT_THAT(result.summary, StartsWith("worker:0 exited 0 after "));
  EXPECT_THAT(out, Not(HasSubstr("stopping")));
  ExpectAllGone(**runner);
}

TEST_F(JobRunnerTest, ABinaryThatCannotRunFailsStartNamingTheTask) {
  const std::string ps = WriteScript("ps.sh", kWaitForever);
  JobPlan plan = Plan(1, 1, false);
  absl::StatusOr<std::unique_ptr<JobRunner>> runner = JobRunner::Start(
      Commands(plan, ps, dir_ + "/no-such-worker"), plan.primary, Options());
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(runner.status().message(),
              HasSubstr("cannot start worker:0: cannot run "));
}

}  // namespace
}  // namespace distrt::launcher
