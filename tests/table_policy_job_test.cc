// Embedding tables kept bounded in a real job, as a user sets it up: launch
// trains the built-in wide & deep on Criteo-shaped TFRecord shards under
// two ps tasks, with a feature spec whose every group admits an id only on
// its second sighting and holds at most kMaxRows rows per ps task, and with
// delta checkpoints between full ones. The job still learns; the chief says
// which saves were deltas; and `distctl export` of the last checkpoint (a
// delta chain) finds every table within its bound.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/util/test_dir.h"
#include "tests/util/launch_jobs.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kDistctl[] = "client/distctl";
constexpr int kNumPs = 2;
constexpr int64_t kMaxRows = 60;

// gen_data's spec with a policy on every embedding group.
void AddPolicies(const std::string& from, const std::string& to) {
  nlohmann::json spec = ReadJson(from);
  ASSERT_TRUE(spec.contains("embedding_groups")) << spec.dump();
  for (nlohmann::json& group : spec["embedding_groups"]) {
    group["admission"] = {
        {"policy", "min_count"}, {"min_count", 2}, {"sketch_width", 4096}};
    group["eviction"] = {{"max_rows", kMaxRows}, {"ttl_steps", 400}};
  }
  std::ofstream(to) << spec.dump(2);
}

TEST(TablePolicyJobTest, BoundedTablesTrainAndCheckpointInDeltas) {
  TestDir dir;
  const std::string data = dir.path() + "/data";
  GenerateData(data, "c",
               {"--shape=criteo", "--rows=30000", "--vocab=200", "--shards=3",
                "--embedding_dim=8", "--eval_fraction=0.2"});
  const std::string spec = dir.path() + "/bounded.features.json";
  AddPolicies(data + "/c.features.json", spec);

  const std::string job = dir.path() + "/job";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(
      LaunchProcess({absl::StrCat("--ps=", kNumPs), "--workers=1", "--chief",
                     "--job_dir=" + job},
                    {"--model=wide_deep", "--features=" + spec,
                     "--train_data=" + data + "/c.train-*",
                     "--eval_data=" + data + "/c.eval-*", "--epochs=2",
                     "--global_batch_size=128", "--learning_rate=0.05",
                     "--checkpoint_every_steps=50", "--full_checkpoint_every=3",
                     "--wait_secs=120"}));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string out = result->stdout_text + result->stderr_text;
  ASSERT_EQ(result->exit_code, 0) << out;
  EXPECT_THAT(out, HasSubstr("saved (full"));
  EXPECT_THAT(out, HasSubstr("saved (delta"));
  const nlohmann::json metrics = ReadJson(job + "/metrics.json");
  // Unbounded, this job reaches about 0.72 (tfrecord_training_test).
  EXPECT_GT(metrics["eval_auc"].get<double>(), 0.62) << metrics.dump();

  SubprocessOptions export_command;
  export_command.argv = {kDistctl, "export",
                         "--checkpoint=" + job + "/checkpoints",
                         "--out=" + dir.path() + "/export"};
  export_command.timeout = absl::Seconds(60);
  absl::StatusOr<SubprocessResult> exported = RunSubprocess(export_command);
  ASSERT_TRUE(exported.ok()) << exported.status();
  ASSERT_EQ(exported->exit_code, 0)
      << exported->stdout_text << exported->stderr_text;
  const nlohmann::json manifest =
      ReadJson(dir.path() + "/export/manifest.json");
  int tables = 0;
  int64_t rows = 0;
  for (const nlohmann::json& table : manifest["hash_tables"]) {
    ++tables;
    rows += table["rows"].get<int64_t>();
    EXPECT_LE(table["rows"].get<int64_t>(), kNumPs * kMaxRows) << table.dump();
  }
  std::printf("eval AUC %.4f; %d tables, %lld rows exported from %s\n",
              metrics["eval_auc"].get<double>(), tables,
              static_cast<long long>(rows),
              manifest["checkpoint"].get<std::string>().c_str());
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::StrContains(line, " saved (")) {
      std::printf("%.*s\n", static_cast<int>(line.size()), line.data());
    }
  }
  EXPECT_GT(tables, 0) << manifest.dump();
  EXPECT_GT(rows, 0) << manifest.dump();
}

}  // namespace
}  // namespace distrt::testing
