#include "runtime/cluster/tf_config.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/json_util.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// What Kubeflow's TFJob operator writes for a worker of a job "mnist" in
// namespace "kubeflow" with a chief, two workers and one ps (Go's
// encoding/json: sorted cluster keys, compact). The evaluator is not part of
// the training cluster there.
constexpr char kKubeflowWorker1[] =
    R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],)"
    R"("ps":["mnist-ps-0.kubeflow.svc:2222"],)"
    R"("worker":["mnist-worker-0.kubeflow.svc:2222",)"
    R"("mnist-worker-1.kubeflow.svc:2222"]},)"
    R"("task":{"type":"worker","index":1},"environment":"cloud"})";

absl::Status ParseError(const std::string& text) {
  return ParseTfConfig(text).status();
}

void ExpectInvalid(const std::string& text, const std::string& message) {
  absl::Status status = ParseError(text);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_EQ(status.message(), message) << text;
}

TEST(TfConfigTest, KubeflowWorker) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(kKubeflowWorker1);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->is_local());
  EXPECT_EQ(config->task, (TaskId{"worker", 1}));
  EXPECT_EQ(config->environment, "cloud");
  EXPECT_EQ(config->rpc_layer, std::nullopt);
  EXPECT_EQ(config->cluster.NumTasks("worker"), 2);
  EXPECT_EQ(*config->cluster.TaskAddress("ps", 0),
            "mnist-ps-0.kubeflow.svc:2222");
}

TEST(TfConfigTest, KubeflowEvaluatorOutsideTheCluster) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(
      R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],)"
      R"("worker":["mnist-worker-0.kubeflow.svc:2222"]},)"
      R"("task":{"type":"evaluator","index":0},"environment":"cloud"})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task, (TaskId{"evaluator", 0}));
}

TEST(TfConfigTest, KubeflowDynamicWorkerSparseClusterIsRefused) {
  // With enableDynamicWorker the operator writes "sparseCluster" (no
  // "cluster") listing only the task's own worker.
  absl::Status status = ParseError(
      R"({"sparseCluster":{"worker":{"3":"mnist-worker-3.kubeflow.svc:2222"},)"
      R"("ps":["mnist-ps-0.kubeflow.svc:2222"]},)"
      R"("task":{"type":"worker","index":3}})");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("\"sparseCluster\""));
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("enableDynamicWorker"));
}

TEST(TfConfigTest, SparseWorkerJob) {
  // A sparse job (an object keyed by index) lists exactly its tasks.
  absl::StatusOr<TfConfig> config = ParseTfConfig(
      R"({"cluster":{"worker":{"3":"mnist-worker-3.kubeflow.svc:2222"},)"
      R"("ps":["mnist-ps-0.kubeflow.svc:2222"]},)"
      R"("task":{"type":"worker","index":3}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task, (TaskId{"worker", 3}));
  EXPECT_EQ(config->cluster.NumTasks("worker"), 1);
  EXPECT_TRUE(config->cluster.FindJob("worker")->sparse);
}

TEST(TfConfigTest, KubeflowDynamicPsWithEmptyWorkerObject) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(
      R"({"cluster":{"worker":{},"ps":["p0.svc:2222","p1.svc:2222"]},)"
      R"("task":{"type":"ps","index":1}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster.NumTasks("worker"), 0);
  EXPECT_EQ(config->task, (TaskId{"ps", 1}));
}

TEST(TfConfigTest, LocalModeForms) {
  for (const char* text :
       {"{}", " { } ", R"({"cluster":{}})", R"({"cluster":{"worker":[]}})",
        R"({"cluster":null})",
        R"({"cluster":{},"task":{"type":"worker","index":0}})"}) {
    absl::StatusOr<TfConfig> config = ParseTfConfig(text);
    ASSERT_TRUE(config.ok()) << text << ": " << config.status();
    EXPECT_TRUE(config->is_local()) << text;
  }
}

TEST(TfConfigTest, IndexAsDigitString) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(
      R"({"cluster":{"worker":["a:1","b:1"]},"task":{"type":"worker","index":"1"}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task->index, 1);
}

TEST(TfConfigTest, RpcLayerAndUnknownKeys) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(
      R"({"cluster":{"worker":["a:1","b:1"]},"task":{"type":"worker","index":0},)"
      R"("rpc_layer":"grpc","something_else":[1,2]})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->rpc_layer, "grpc");
}

TEST(TfConfigTest, ClusterWithoutTaskIsAClientView) {
  absl::StatusOr<TfConfig> config =
      ParseTfConfig(R"({"cluster":{"ps":["a:1","b:1"]}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->task.has_value());
  EXPECT_EQ(config->cluster.NumTasks("ps"), 2);
}

TEST(TfConfigTest, SyntaxErrors) {
  ExpectInvalid("",
                "TF_CONFIG: is set but empty; unset it, or set it to {} for "
                "local mode");
  ExpectInvalid("  \n",
                "TF_CONFIG: is set but empty; unset it, or set it to {} for "
                "local mode");
  EXPECT_THAT(
      ParseError("{\"cluster\": "),
      ::testing::Property(&absl::Status::message,
                          HasSubstr("TF_CONFIG: not valid JSON: at line 1")));
  ExpectInvalid("[1]", "TF_CONFIG: must be a JSON object, got a list");
  ExpectInvalid("\"x\"",
                "TF_CONFIG: must be a JSON object, got the string \"x\"");
  ExpectInvalid(R"({"cluster":["a:1"]})",
                "TF_CONFIG: \"cluster\" must be an object from task type to "
                "task addresses, got a list");
}

TEST(TfConfigTest, NestingDeeperThanTheLimitIsRefusedBeforeParsing) {
  // Brackets inside strings do not count.
  const std::string in_strings =
      R"({"environment":"\"[[)" + std::string(200, '{') + R"("})";
  absl::StatusOr<TfConfig> config = ParseTfConfig(in_strings);
  EXPECT_TRUE(config.ok()) << config.status();
  const std::string deep =
      "{\n\"environment\": " + std::string(kMaxJsonNesting, '[') +
      std::string(kMaxJsonNesting, ']') + "}";
  ExpectInvalid(deep, absl::StrCat("TF_CONFIG: not valid JSON: at line 2, "
                                   "column ",
                                   16 + kMaxJsonNesting - 1,
                                   ": lists and objects nested deeper than "
                                   "100"));
  // Closing more than was opened is the parser's to report, even with deep
  // nesting after it.
  EXPECT_THAT(ParseError("]" + std::string(150, '[')),
              ::testing::Property(&absl::Status::message,
                                  HasSubstr("at line 1, column 1: syntax "
                                            "error")));
}

TEST(TfConfigTest, MalformedJsonNamesThePosition) {
  absl::Status status = ParseError("{\"cluster\": {\"worker\": [\"a:1\",]}}");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 1, column"));
}

TEST(TfConfigTest, JobValueErrors) {
  ExpectInvalid(R"({"cluster":{"worker":"a:1"}})",
                "TF_CONFIG: job \"worker\" must be a list of \"host:port\" "
                "addresses or an object from task index to address, got the "
                "string \"a:1\"");
  ExpectInvalid(R"({"cluster":{"worker":["a:1",2222]}})",
                "TF_CONFIG: job \"worker\" task 1: address must be a "
                "\"host:port\" string, got the number 2222");
  ExpectInvalid(R"({"cluster":{"worker":{"x":"a:1"}}})",
                "TF_CONFIG: job \"worker\": task index \"x\" is not an "
                "integer");
  ExpectInvalid(R"({"cluster":{"worker":{"-1":"a:1"}}})",
                "TF_CONFIG: job \"worker\": task index -1 is negative");
  ExpectInvalid(R"({"cluster":{"worker":{"0":["a:1"]}}})",
                "TF_CONFIG: job \"worker\" task 0: address must be a "
                "\"host:port\" string, got a list");
}

TEST(TfConfigTest, TaskTypesOutsideMultiWorkerTraining) {
  ExpectInvalid(
      R"({"cluster":{"master":["a:1"]},"task":{"type":"master","index":0}})",
      "TF_CONFIG: job \"master\" is not a task type of multi-worker "
      "training; use \"chief\" instead (\"master\" is TF1's name for "
      "it) (allowed: chief, worker, ps, evaluator)");
  ExpectInvalid(R"({"cluster":{"Worker":["a:1"]}})",
                "TF_CONFIG: job \"Worker\" is not a task type of multi-worker "
                "training; use \"worker\" (task types are lower case) "
                "(allowed: chief, worker, ps, evaluator)");
  ExpectInvalid(R"({"cluster":{"trainer":["a:1"]}})",
                "TF_CONFIG: job \"trainer\" is not a task type of multi-worker "
                "training (allowed: chief, worker, ps, evaluator)");
  ExpectInvalid(
      R"({"cluster":{"worker":["a:1"]},"task":{"type":"master","index":0}})",
      "TF_CONFIG: task type \"master\" is not a task type of "
      "multi-worker training; use \"chief\" instead (\"master\" is "
      "TF1's name for it) (allowed: chief, worker, ps, evaluator)");
}

TEST(TfConfigTest, AtMostOneChiefAndOneEvaluator) {
  ExpectInvalid(R"({"cluster":{"chief":["a:1","b:1"]}})",
                "TF_CONFIG: job \"chief\" has 2 tasks; there may be at most "
                "one chief task");
  ExpectInvalid(R"({"cluster":{"evaluator":{"0":"a:1","1":"b:1"}}})",
                "TF_CONFIG: job \"evaluator\" has 2 tasks; there may be at "
                "most one evaluator task");
}

TEST(TfConfigTest, AddressErrors) {
  ExpectInvalid(R"({"cluster":{"ps":["ps0"]}})",
                "TF_CONFIG: job \"ps\" task 0: address \"ps0\" has no port; "
                "write it as \"host:port\"");
  ExpectInvalid(R"({"cluster":{"ps":["ps0:http"]}})",
                "TF_CONFIG: job \"ps\" task 0: address \"ps0:http\" has port "
                "\"http\"; a port is a number from 1 to 65535");
  ExpectInvalid(R"({"cluster":{"ps":["ps0:70000"]}})",
                "TF_CONFIG: job \"ps\" task 0: address \"ps0:70000\" has port "
                "\"70000\"; a port is a number from 1 to 65535");
  ExpectInvalid(R"({"cluster":{"ps":[":2222"]}})",
                "TF_CONFIG: job \"ps\" task 0: address \":2222\" has no host");
  ExpectInvalid(R"({"cluster":{"ps":["[::1]"]}})",
                "TF_CONFIG: job \"ps\" task 0: address \"[::1]\" has no port; "
                "write it as \"host:port\"");
  ExpectInvalid(R"({"cluster":{"worker":["a:1"],"ps":["b:1","a:1"]}})",
                "TF_CONFIG: address \"a:1\" is used by both worker task 0 and "
                "ps task 1");
  EXPECT_TRUE(ParseTfConfig(R"({"cluster":{"ps":["[::1]:2222"]}})").ok());
}

TEST(TfConfigTest, TaskErrors) {
  const std::string cluster =
      R"("cluster":{"chief":["c:1"],"worker":["w0:1","w1:1","w2:1"]})";
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker","index":3}})",
                "TF_CONFIG: task index 3 is out of range for job \"worker\" "
                "(3 tasks)");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker","index":-1}})",
                "TF_CONFIG: task index -1 is negative");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker","index":"-2"}})",
                "TF_CONFIG: task index -2 is negative");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker","index":"one"}})",
                "TF_CONFIG: task index \"one\" is not an integer");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker","index":1.5}})",
                "TF_CONFIG: task index must be an integer, got the number 1.5");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker"}})",
                "TF_CONFIG: \"task\" has no \"index\"");
  ExpectInvalid("{" + cluster + R"(,"task":{"index":0}})",
                "TF_CONFIG: \"task\" has no \"type\"");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":7,"index":0}})",
                "TF_CONFIG: task \"type\" must be a string, got the number 7");
  ExpectInvalid("{" + cluster + R"(,"task":"worker"})",
                "TF_CONFIG: \"task\" must be an object like {\"type\": "
                "\"worker\", \"index\": 0}, got the string \"worker\"");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"ps","index":0}})",
                "TF_CONFIG: task type \"ps\" is not a job in \"cluster\" "
                "(jobs: chief, worker)");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"chief","index":1}})",
                "TF_CONFIG: task index 1 is out of range for job \"chief\" "
                "(1 tasks)");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"evaluator","index":1}})",
                "TF_CONFIG: task index 1 is out of range for an evaluator "
                "outside the cluster (there is one evaluator, 0)");
  ExpectInvalid("{" + cluster + R"(,"rpc_layer":5})",
                "TF_CONFIG: \"rpc_layer\" must be a string, got the number 5");
  ExpectInvalid("{" + cluster + R"(,"environment":["cloud"]})",
                "TF_CONFIG: \"environment\" must be a string, got a list");
}

TEST(TfConfigTest, SparseIndicesAreCheckedAgainstThosePresent) {
  const std::string cluster = R"("cluster":{"worker":{"1":"w1:1","3":"w3:1"}})";
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker","index":2}})",
                "TF_CONFIG: task index 2 is not in job \"worker\" (its "
                "indices: 1, 3)");
  ExpectInvalid("{" + cluster + R"(,"task":{"type":"worker","index":0}})",
                "TF_CONFIG: task index 0 is not in job \"worker\" (its "
                "indices: 1, 3)");
  EXPECT_TRUE(
      ParseTfConfig("{" + cluster + R"(,"task":{"type":"worker","index":3}})")
          .ok());
}

TEST(TfConfigTest, FromEnvironment) {
  ASSERT_EQ(unsetenv("TF_CONFIG"), 0);
  absl::StatusOr<TfConfig> unset = TfConfigFromEnvironment();
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_TRUE(unset->is_local());

  ASSERT_EQ(setenv("TF_CONFIG", "", 1), 0);
  EXPECT_EQ(TfConfigFromEnvironment().status().code(),
            absl::StatusCode::kInvalidArgument);

  ASSERT_EQ(setenv("TF_CONFIG", kKubeflowWorker1, 1), 0);
  absl::StatusOr<TfConfig> set = TfConfigFromEnvironment();
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->task, (TaskId{"worker", 1}));
  ASSERT_EQ(unsetenv("TF_CONFIG"), 0);
}

}  // namespace
}  // namespace distrt
