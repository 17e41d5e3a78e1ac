#include "deploy/launcher/task_process.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt::launcher {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<TaskProcess> StartShell(const std::string& script,
                                        const std::string& tf_config = "{}") {
  absl::StatusOr<std::unique_ptr<TaskProcess>> process =
      TaskProcess::Start({"/bin/sh", {"-c", script}, tf_config});
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

// Everything the child writes until it has exited and its output ended;
// gives up (failing the test) after `limit`.
struct Finished {
  std::string output;
  std::optional<ExitStatus> status;
};
Finished RunToEnd(TaskProcess& process,
                  std::chrono::seconds limit = std::chrono::seconds(20)) {
  Finished result;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (process.fd() >= 0) {
      pollfd fd = {process.fd(), POLLIN, 0};
      poll(&fd, 1, 100);
      char buffer[4096];
      const ssize_t got = read(process.fd(), buffer, sizeof(buffer));
      if (got > 0) result.output.append(buffer, got);
      if (got == 0) process.CloseOutput();
    } else {
      // Output ended; the exit follows at once.
      poll(nullptr, 0, 10);
    }
    result.status = process.TryReap();
    if (result.status.has_value() && process.fd() < 0) return result;
  }
  ADD_FAILURE() << "the child did not finish within the limit";
  return result;
}

TEST(TaskProcessTest, OutputEnvironmentAndExitCode) {
  setenv("TF_CONFIG", "inherited", 1);
  std::unique_ptr<TaskProcess> process = StartShell(
      "echo \"config=$TF_CONFIG\"; env | grep -c '^TF_CONFIG='; "
      "echo to-stderr >&2; read line; echo \"read status $?\"; exit 3",
      R"({"task": 1})");
  unsetenv("TF_CONFIG");
  ASSERT_NE(process, nullptr);
  EXPECT_GT(process->pid(), 0);
  const Finished finished = RunToEnd(*process);
  // One TF_CONFIG, the given one; stderr in the same pipe, in order; stdin
  // at EOF (/dev/null) so `read` fails.
  EXPECT_EQ(finished.output,
            "config={\"task\": 1}\n1\nto-stderr\nread status 1\n");
  ASSERT_TRUE(finished.status.has_value());
  EXPECT_FALSE(finished.status->success());
  EXPECT_FALSE(finished.status->signaled);
  EXPECT_EQ(finished.status->code, 3);
  EXPECT_EQ(finished.status->ToString(), "exited with status 3");
  // Kept once reaped.
  EXPECT_EQ(process->TryReap()->code, 3);
}

TEST(TaskProcessTest, SignalReachesTheWholeProcessGroup) {
  // The background sleep holds the pipe open: its end, and so EOF, comes
  // only if the signal reached it too, not just the shell.
  std::unique_ptr<TaskProcess> process =
      StartShell("sleep 1000 & echo started; wait");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(getpgid(process->pid()), process->pid());
  // Once "started" is out, the sleep has been forked.
  std::string first;
  while (first.find('\n') == std::string::npos) {
    pollfd fd = {process->fd(), POLLIN, 0};
    ASSERT_EQ(poll(&fd, 1, 20000), 1) << "no output from the child";
    char buffer[64];
    const ssize_t got = read(process->fd(), buffer, sizeof(buffer));
    ASSERT_GT(got, 0);
    first.append(buffer, got);
  }
  EXPECT_EQ(first, "started\n");
  EXPECT_FALSE(process->TryReap().has_value());
  process->Signal(SIGTERM);
  const Finished finished = RunToEnd(*process);
  ASSERT_TRUE(finished.status.has_value());
  EXPECT_TRUE(finished.status->signaled);
  EXPECT_EQ(finished.status->signal, SIGTERM);
  EXPECT_EQ(finished.status->ToString(), "killed by signal 15 (SIGTERM)");
}

TEST(TaskProcessTest, MissingBinaryIsAnErrorAndNoChild) {
  absl::StatusOr<std::unique_ptr<TaskProcess>> process =
      TaskProcess::Start({"/nonexistent/ps_server", {}, "{}"});
  ASSERT_FALSE(process.ok());
  EXPECT_EQ(process.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(process.status().message(),
              HasSubstr("cannot run /nonexistent/ps_server"));
  // The failed child was reaped by Start.
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(TaskProcessTest, ChildDiesWithItsLauncher) {
  const int pidfd_probe =
      static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd_probe < 0) GTEST_SKIP() << "no pidfd_open on this kernel";
  close(pidfd_probe);

  int pid_pipe[2];
  int go_pipe[2];
  ASSERT_EQ(pipe(pid_pipe), 0);
  ASSERT_EQ(pipe(go_pipe), 0);
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    // A stand-in launcher: starts a task, reports its pid, and dies when
    // told to without any cleanup. The task is `sleep` itself (exec):
    // PR_SET_PDEATHSIG covers the task process, not what it starts.
    absl::StatusOr<std::unique_ptr<TaskProcess>> task =
        TaskProcess::Start({"/bin/sh", {"-c", "exec sleep 1000"}, "{}"});
    const pid_t task_pid = task.ok() ? (*task)->pid() : -1;
    if (write(pid_pipe[1], &task_pid, sizeof(task_pid)) < 0) _exit(1);
    char go;
    if (read(go_pipe[0], &go, 1) < 0) _exit(1);
    _exit(0);
  }
  pid_t task_pid = -1;
  ASSERT_EQ(read(pid_pipe[0], &task_pid, sizeof(task_pid)),
            static_cast<ssize_t>(sizeof(task_pid)));
  ASSERT_GT(task_pid, 0);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, task_pid, 0));
  ASSERT_GE(pidfd, 0) << "the task is not running: " << std::strerror(errno);

  ASSERT_EQ(write(go_pipe[1], "x", 1), 1);
  ASSERT_EQ(waitpid(launcher, nullptr, 0), launcher);
  // Readable once the task has ended.
  pollfd ended = {pidfd, POLLIN, 0};
  EXPECT_EQ(poll(&ended, 1, 20000), 1) << "the task outlived its launcher";
  close(pidfd);
  for (int fd : {pid_pipe[0], pid_pipe[1], go_pipe[0], go_pipe[1]}) close(fd);
}

}  // namespace
}  // namespace distrt::launcher
