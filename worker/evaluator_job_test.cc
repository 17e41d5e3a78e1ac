#include "worker/evaluator_job.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/tf_config.h"
#include "runtime/util/test_dir.h"
#include "tests/util/separable_libsvm.h"
#include "worker/training_job.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// The data: 20 features, each in a row with probability 1/4.
constexpr int kFeatures = 20;
constexpr int kFeatureOneIn = 4;

// The local addresses (as /proc/net/tcp{,6} write them) of the TCP sockets
// of this process that are listening: the sockets among /proc/self/fd
// whose inode is in LISTEN state (0A) in the tables.
std::vector<std::string> ListeningSockets() {
  std::set<std::string> listening;  // "inode local_address"
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid,
          timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >>
          retransmits >> uid >> timeout >> inode;
      if (state == "0A") listening.insert(absl::StrCat(inode, " ", local));
    }
  }
  std::vector<std::string> mine;
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) {
    ADD_FAILURE() << "cannot list /proc/self/fd";
    return mine;
  }
  while (const dirent* entry = readdir(fds)) {
    char target[64] = {};
    const std::string link = absl::StrCat("/proc/self/fd/", entry->d_name);
    if (readlink(link.c_str(), target, sizeof(target) - 1) <= 0) continue;
    absl::string_view text(target);
    if (!absl::ConsumePrefix(&text, "socket:[") ||
        !absl::ConsumeSuffix(&text, "]")) {
      continue;
    }
    for (const std::string& socket : listening) {
      if (absl::StartsWith(socket, absl::StrCat(text, " "))) {
        mine.push_back(socket.substr(text.size() + 1));
      }
    }
  }
  closedir(fds);
  return mine;
}

TEST(ListeningSocketsTest, SeesAListeningSocketOfThisProcess) {
  const std::vector<std::string> before = ListeningSockets();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  ASSERT_EQ(listen(fd, 1), 0);
  EXPECT_EQ(ListeningSockets().size(), before.size() + 1);
  close(fd);
  EXPECT_EQ(ListeningSockets().size(), before.size());
}

class EvaluatorJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.model = "logreg";
    options_.train_data = dir_.WriteFile("train.svm", "");
    options_.eval_data = dir_.WriteFile("eval.svm", "");
    testing::WriteSeparableLibsvm(options_.train_data, 800, 1, kFeatures,
                                  kFeatureOneIn);
    testing::WriteSeparableLibsvm(options_.eval_data, 300, 2, kFeatures,
                                  kFeatureOneIn);
    options_.train_steps = 40;
    options_.global_batch_size = 32;
    options_.strategy = StrategyKind::kParameterServer;
    options_.checkpoint_dir = dir_.path() + "/ckpt";
    options_.checkpoint_every_steps = 10;
    options_.log_every_secs = 60;
    options_.wait_secs = 10;
  }

  TestDir dir_;
  WorkerOptions options_;
};

// The chief trains alone (its variables in memory) and writes checkpoints
// and the final marker; the evaluator then restores the final checkpoint
// and scores what the chief scored at the end, serving nothing meanwhile.
TEST_F(EvaluatorJobTest, EvaluatesTheFinalCheckpointWithoutListening) {
  absl::StatusOr<FinalMetrics> chief =
      RunTrainingJob(options_, TfConfig(), [](absl::string_view) {});
  ASSERT_TRUE(chief.ok()) << chief.status();
  ASSERT_EQ(chief->global_step, 40);
  ASSERT_TRUE(chief->eval_accuracy.has_value());

  absl::StatusOr<TfConfig> tf_config =
      ParseTfConfig(R"({"cluster":{"chief":["127.0.0.1:1"]},)"
                    R"("task":{"type":"evaluator","index":0}})");
  ASSERT_TRUE(tf_config.ok()) << tf_config.status();
  WorkerOptions evaluator_options = options_;
  evaluator_options.metrics_out = dir_.path() + "/metrics.json";
  const std::vector<std::string> listening_before = ListeningSockets();
  std::vector<std::string> lines;
  std::vector<std::string> listening_while_running;
  absl::StatusOr<FinalMetrics> metrics = RunEvaluatorJob(
      evaluator_options, *tf_config, [&](absl::string_view line) {
        lines.emplace_back(line);
        const std::vector<std::string> listening = ListeningSockets();
        if (listening.size() > listening_before.size()) {
          listening_while_running.push_back(absl::StrCat(
              "after \"", line, "\": ", absl::StrJoin(listening, ", ")));
        }
      });
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(listening_while_running.empty())
      << absl::StrJoin(listening_while_running, "\n");

  EXPECT_EQ(metrics->global_step, chief->global_step);
  ASSERT_TRUE(metrics->eval_accuracy.has_value());
  EXPECT_NEAR(*metrics->eval_accuracy, *chief->eval_accuracy, 1e-9);
  ASSERT_TRUE(metrics->eval_auc.has_value());
  EXPECT_NEAR(*metrics->eval_auc, *chief->eval_auc, 1e-9);
  EXPECT_FALSE(metrics->train_loss.has_value());
  const std::string all = absl::StrJoin(lines, "\n");
  EXPECT_THAT(all, HasSubstr("evaluated ckpt-"));
  EXPECT_THAT(all, HasSubstr("evaluated the final checkpoint"));
  std::ifstream written(EvaluatorMetricsPath(evaluator_options.metrics_out));
  EXPECT_TRUE(written.good());
}

}  // namespace
}  // namespace distrt
