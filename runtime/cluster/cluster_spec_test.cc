#include "runtime/cluster/cluster_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/cluster_spec_json.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;

TEST(ClusterSpecTest, EmptyClusterIsLocal) {
  EXPECT_TRUE(ClusterSpec().empty());
  absl::StatusOr<ClusterSpec> only_empty_jobs =
      ClusterSpec::Create({JobSpec{"worker", {}, false}});
  ASSERT_TRUE(only_empty_jobs.ok());
  EXPECT_TRUE(only_empty_jobs->empty());
  EXPECT_TRUE(only_empty_jobs->HasJob("worker"));
}

TEST(ClusterSpecTest, LookupsOnDenseAndSparseJobs) {
  absl::StatusOr<ClusterSpec> spec =
      ClusterSpec::Create({JobSpec{"worker", {{0, "w0:1"}, {1, "w1:1"}}, false},
                           JobSpec{"ps", {{2, "p2:1"}, {5, "p5:1"}}, true}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->NumTasks(), 4);
  EXPECT_EQ(spec->NumTasks("ps"), 2);
  EXPECT_EQ(spec->NumTasks("chief"), 0);
  EXPECT_THAT(spec->TaskIndices("ps"), ElementsAre(2, 5));
  EXPECT_EQ(*spec->TaskAddress("ps", 5), "p5:1");
  EXPECT_EQ(spec->TaskAddress("ps", 3).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(spec->TaskAddress("ps", 3).status().message(),
            "job \"ps\" has no task 3");
  EXPECT_EQ(spec->TaskAddress("chief", 0).status().message(),
            "no job \"chief\" in the cluster");
}

TEST(ClusterSpecTest, CreateRejectsWhatJsonCannotExpress) {
  EXPECT_EQ(ClusterSpec::Create({JobSpec{"worker", {{-1, "a:1"}}, true}})
                .status()
                .message(),
            "job \"worker\": task index -1 is negative");
  EXPECT_EQ(ClusterSpec::Create({JobSpec{"ps", {{0, "a:1"}}, false},
                                 JobSpec{"ps", {{1, "b:1"}}, false}})
                .status()
                .message(),
            "job \"ps\" is given twice");
}

TEST(ClusterSpecTest, AddressValidation) {
  EXPECT_TRUE(ValidateTaskAddress("localhost:2222").ok());
  EXPECT_TRUE(ValidateTaskAddress("job-worker-0.ns.svc:2222").ok());
  EXPECT_TRUE(ValidateTaskAddress("[fe80::1]:65535").ok());
  EXPECT_FALSE(ValidateTaskAddress("").ok());
  EXPECT_FALSE(ValidateTaskAddress("host:").ok());
  EXPECT_FALSE(ValidateTaskAddress("host:0").ok());
  EXPECT_FALSE(ValidateTaskAddress("host:-1").ok());
  EXPECT_FALSE(ValidateTaskAddress("host:+80").ok());
  absl::StatusOr<HostPort> v6 = ParseTaskAddress("[fe80::1]:2222");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "[fe80::1]");
  EXPECT_EQ(v6->port, 2222);
}

TEST(ClusterSpecJsonTest, RoundTripKeepsOrderAndShape) {
  const std::string text =
      R"({"worker":["w0:1","w1:1"],"ps":{"0":"p0:1","3":"p3:1"},"chief":["c:1"]})";
  absl::StatusOr<ClusterSpec> spec = ParseClusterSpecText(text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(ClusterSpecToJson(*spec).dump(), text);
}

TEST(ClusterSpecJsonTest, AcceptsAWholeTfConfig) {
  absl::StatusOr<ClusterSpec> spec = ParseClusterSpecText(
      R"({"cluster":{"ps":["p0:1"]},"task":{"type":"ps","index":0}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->NumTasks("ps"), 1);
}

TEST(ClusterSpecJsonTest, SparseIndexGivenTwice) {
  EXPECT_EQ(ParseClusterSpecText(R"({"ps":{"1":"a:1","01":"b:1"}})")
                .status()
                .message(),
            "job \"ps\": task index 1 is given twice");
}

}  // namespace
}  // namespace distrt
