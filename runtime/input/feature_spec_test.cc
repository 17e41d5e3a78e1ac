#include "runtime/input/feature_spec.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/ps/table_policy.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A small spec with every field, the base of the error cases.
constexpr char kSpec[] = R"({
  "label": "clicked",
  "numeric": [
    {"name": "I1"},
    {"name": "I2", "length": 3, "default": -1.5}
  ],
  "categorical": [
    {"name": "C1", "kind": "identity", "buckets": 1000, "required": true},
    {"name": "C2", "kind": "hash_bucket", "buckets": 100000},
    {"name": "C3", "kind": "hashed"},
    {"name": "C4", "kind": "hash_bucket", "buckets": 100000}
  ],
  "embedding_groups": [
    {"name": "user", "features": ["C1"], "dim": 16, "combiner": "sum",
     "weight_feature": "C1_weight"},
    {"name": "ads", "features": ["C2", "C4"], "dim": 8},
    {"name": "items", "features": ["C3"], "dim": 32, "combiner": "sqrtn"}
  ]
})";

// kSpec with `from` replaced by `to` (which must occur exactly once).
std::string SpecWith(absl::string_view from, absl::string_view to) {
  const std::string spec = kSpec;
  const std::string needle(from);
  EXPECT_EQ(spec.find(needle), spec.rfind(needle)) << needle;
  EXPECT_NE(spec.find(needle), std::string::npos) << needle;
  return absl::StrReplaceAll(spec, {{from, to}});
}

void ExpectError(absl::string_view json, absl::string_view message) {
  absl::StatusOr<FeatureSpec> spec = ParseFeatureSpec(json, "spec.json");
  ASSERT_FALSE(spec.ok()) << json;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(), message) << json;
}

TEST(FeatureSpecTest, ParsesEveryField) {
  absl::StatusOr<FeatureSpec> spec = ParseFeatureSpec(kSpec, "spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->label, "clicked");

  ASSERT_EQ(spec->numeric.size(), 2u);
  EXPECT_EQ(spec->numeric[0].name, "I1");
  EXPECT_EQ(spec->numeric[0].length, 1);
  EXPECT_FALSE(spec->numeric[0].has_default);
  EXPECT_EQ(spec->numeric[1].name, "I2");
  EXPECT_EQ(spec->numeric[1].length, 3);
  EXPECT_TRUE(spec->numeric[1].has_default);
  EXPECT_EQ(spec->numeric[1].default_value, -1.5f);
  EXPECT_EQ(spec->num_dense(), 4);

  ASSERT_EQ(spec->categorical.size(), 4u);
  EXPECT_EQ(spec->categorical[0].kind, CategoricalKind::kIdentity);
  EXPECT_EQ(spec->categorical[0].buckets, 1000);
  EXPECT_TRUE(spec->categorical[0].required);
  EXPECT_EQ(spec->categorical[1].kind, CategoricalKind::kHashBucket);
  EXPECT_EQ(spec->categorical[1].buckets, 100000);
  EXPECT_FALSE(spec->categorical[1].required);
  EXPECT_EQ(spec->categorical[2].kind, CategoricalKind::kHashed);
  EXPECT_EQ(spec->categorical[2].buckets, 0);

  ASSERT_EQ(spec->groups.size(), 3u);
  EXPECT_EQ(spec->groups[0].name, "user");
  EXPECT_EQ(spec->groups[0].features, std::vector<std::string>{"C1"});
  EXPECT_EQ(spec->groups[0].dim, 16);
  EXPECT_EQ(spec->groups[0].combiner, Combiner::kSum);
  EXPECT_EQ(spec->groups[0].weight_feature, "C1_weight");
  EXPECT_EQ(spec->groups[1].features, (std::vector<std::string>{"C2", "C4"}));
  EXPECT_EQ(spec->groups[1].combiner, Combiner::kMean);  // the default
  EXPECT_EQ(spec->groups[1].weight_feature, "");
  EXPECT_EQ(spec->groups[2].combiner, Combiner::kSqrtn);

  EXPECT_EQ(spec->FindCategorical("C3"), &spec->categorical[2]);
  EXPECT_EQ(spec->FindCategorical("I1"), nullptr);
  EXPECT_EQ(spec->FindCategorical("nope"), nullptr);
  EXPECT_EQ(&spec->GroupKey(spec->groups[1]), &spec->categorical[1]);
}

TEST(FeatureSpecTest, OnlyTheLabelIsNeeded) {
  absl::StatusOr<FeatureSpec> spec =
      ParseFeatureSpec(R"({"label": "y"})", "spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->label, "y");
  EXPECT_TRUE(spec->numeric.empty());
  EXPECT_TRUE(spec->categorical.empty());
  EXPECT_TRUE(spec->groups.empty());
  EXPECT_EQ(spec->num_dense(), 0);
}

TEST(FeatureSpecTest, ParsesACriteoShapedSpec) {
  std::string json = R"({"label": "label", "numeric": [)";
  for (int i = 1; i <= 13; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name": "I)", i,
                    R"(", "default": 0})");
  }
  absl::StrAppend(&json, R"(], "categorical": [)");
  for (int i = 1; i <= 26; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name": "C)", i,
                    R"(", "kind": "hash_bucket", "buckets": 1000000})");
  }
  absl::StrAppend(&json, R"(], "embedding_groups": [)");
  for (int i = 1; i <= 26; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name": "C)", i,
                    R"(", "features": ["C)", i, R"("], "dim": 16})");
  }
  absl::StrAppend(&json, "]}");
  absl::StatusOr<FeatureSpec> spec = ParseFeatureSpec(json, "criteo.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->num_dense(), 13);
  EXPECT_EQ(spec->categorical.size(), 26u);
  EXPECT_EQ(spec->groups.size(), 26u);
  EXPECT_EQ(spec->groups[25].features, std::vector<std::string>{"C26"});
}

TEST(FeatureSpecTest, Names) {
  EXPECT_EQ(CombinerName(Combiner::kSum), "sum");
  EXPECT_EQ(CombinerName(Combiner::kMean), "mean");
  EXPECT_EQ(CombinerName(Combiner::kSqrtn), "sqrtn");
  EXPECT_EQ(CategoricalKindName(CategoricalKind::kIdentity), "identity");
  EXPECT_EQ(CategoricalKindName(CategoricalKind::kHashBucket), "hash_bucket");
  EXPECT_EQ(CategoricalKindName(CategoricalKind::kHashed), "hashed");
}

TEST(FeatureSpecTest, TopLevelErrors) {
  {
    absl::StatusOr<FeatureSpec> spec = ParseFeatureSpec("{", "spec.json");
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()),
                StartsWith("spec.json: not valid JSON: "));
  }
  ExpectError("[]", "spec.json: a feature spec must be an object, got a list");
  ExpectError(R"({"label": "y", "lable": "z"})",
              "spec.json: unknown field \"lable\" (the fields are label, "
              "numeric, categorical, embedding_groups)");
  ExpectError(R"({"numeric": []})", "spec.json: label is missing");
  ExpectError(R"({"label": 3})",
              "spec.json: label must be a string, got the number 3");
  ExpectError(R"({"label": ""})", "spec.json: label must not be empty");
  ExpectError(R"({"label": "y", "numeric": {}})",
              "spec.json: numeric must be a list, got an object");
  ExpectError(R"({"label": "y", "categorical": "C1"})",
              "spec.json: categorical must be a list, got the string \"C1\"");
  ExpectError(R"({"label": "y", "embedding_groups": null})",
              "spec.json: embedding_groups must be a list, got null");
  ExpectError(R"({"label": "y", "numeric": ["I1"]})",
              "spec.json: numeric[0]: must be an object, got the string "
              "\"I1\"");
}

TEST(FeatureSpecTest, NumericErrors) {
  ExpectError(SpecWith(R"({"name": "I1"})", R"({"length": 1})"),
              "spec.json: numeric[0]: name is missing");
  ExpectError(SpecWith(R"({"name": "I1"})", R"({"name": 1})"),
              "spec.json: numeric[0]: name must be a string, got the number "
              "1");
  ExpectError(SpecWith(R"({"name": "I1"})", R"({"name": ""})"),
              "spec.json: numeric[0]: name must not be empty");
  ExpectError(SpecWith(R"({"name": "I1"})", R"({"name": "I1", "lenght": 2})"),
              "spec.json: numeric[0] (\"I1\"): unknown field \"lenght\" (the "
              "fields are name, length, default)");
  ExpectError(SpecWith(R"("length": 3)", R"("length": 1.5)"),
              "spec.json: numeric[1] (\"I2\"): length must be an integer, "
              "got the number 1.5");
  ExpectError(SpecWith(R"("length": 3)", R"("length": "3")"),
              "spec.json: numeric[1] (\"I2\"): length must be an integer, "
              "got the string \"3\"");
  ExpectError(SpecWith(R"("length": 3)", R"("length": 0)"),
              "spec.json: numeric[1] (\"I2\"): length must be at least 1, "
              "not 0");
  ExpectError(SpecWith(R"("length": 3)", R"("length": 2000000)"),
              "spec.json: numeric[1] (\"I2\"): length 2000000 is more than "
              "the most allowed, 1048576");
  ExpectError(SpecWith(R"("length": 3)", R"("length": 18446744073709551615)"),
              "spec.json: numeric[1] (\"I2\"): length 18446744073709551615 "
              "is too large");
  ExpectError(SpecWith(R"("default": -1.5)", R"("default": "0")"),
              "spec.json: numeric[1] (\"I2\"): default must be a number, got "
              "the string \"0\"");
  ExpectError(SpecWith(R"("default": -1.5)", R"("default": 1e39)"),
              "spec.json: numeric[1] (\"I2\"): default 1e+39 does not fit in "
              "a float");
}

TEST(FeatureSpecTest, CategoricalErrors) {
  ExpectError(
      SpecWith(R"({"name": "C3", "kind": "hashed"})", R"({"kind": "hashed"})"),
      "spec.json: categorical[2]: name is missing");
  ExpectError(SpecWith(R"("kind": "hashed")", R"("kind": "hashed", "x": 1)"),
              "spec.json: categorical[2] (\"C3\"): unknown field \"x\" (the "
              "fields are name, kind, buckets, required)");
  ExpectError(SpecWith(R"("kind": "hashed")", R"("buckets": 1)"),
              "spec.json: categorical[2] (\"C3\"): kind is missing "
              "(identity, hash_bucket or hashed)");
  ExpectError(SpecWith(R"("kind": "hashed")", R"("kind": 2)"),
              "spec.json: categorical[2] (\"C3\"): kind must be a string, "
              "got the number 2");
  ExpectError(SpecWith(R"("kind": "hashed")", R"("kind": "hash")"),
              "spec.json: categorical[2] (\"C3\"): unknown kind \"hash\" (the "
              "kinds are identity, hash_bucket, hashed)");
  ExpectError(
      SpecWith(R"("kind": "hashed")", R"("kind": "hashed", "buckets": 10)"),
      "spec.json: categorical[2] (\"C3\"): buckets does not apply to "
      "kind hashed, whose ids are kept whole (use kind hash_bucket "
      "for Fingerprint64 % buckets)");
  ExpectError(SpecWith(R"("buckets": 1000,)", ""),
              "spec.json: categorical[0] (\"C1\"): buckets is missing (kind "
              "identity needs a bucket count)");
  ExpectError(SpecWith(R"("buckets": 1000,)", R"("buckets": 0,)"),
              "spec.json: categorical[0] (\"C1\"): buckets must be at least 1 "
              "for kind identity, not 0");
  ExpectError(SpecWith(R"("buckets": 1000,)", R"("buckets": -5,)"),
              "spec.json: categorical[0] (\"C1\"): buckets must be at least 1 "
              "for kind identity, not -5");
  ExpectError(SpecWith(R"("buckets": 1000,)", R"("buckets": 1e3,)"),
              "spec.json: categorical[0] (\"C1\"): buckets must be an "
              "integer, got the number 1000.0");
  ExpectError(SpecWith(R"("required": true)", R"("required": "yes")"),
              "spec.json: categorical[0] (\"C1\"): required must be true or "
              "false, got the string \"yes\"");
  ExpectError(SpecWith(R"({"name": "C3", "kind": "hashed"})",
                       R"({"name": "", "kind": "hashed"})"),
              "spec.json: categorical[2]: name must not be empty");
}

TEST(FeatureSpecTest, NamesUsedTwice) {
  ExpectError(SpecWith(R"({"name": "I1"})", R"({"name": "clicked"})"),
              "spec.json: numeric[0] (\"clicked\"): feature \"clicked\" is "
              "already declared by label");
  ExpectError(SpecWith(R"({"name": "I1"})", R"({"name": "I2"})"),
              "spec.json: numeric[1] (\"I2\"): feature \"I2\" is already "
              "declared by numeric[0]");
  ExpectError(SpecWith(R"({"name": "C3", "kind": "hashed"})",
                       R"({"name": "I1", "kind": "hashed"})"),
              "spec.json: categorical[2] (\"I1\"): feature \"I1\" is already "
              "declared by numeric[0]");
  ExpectError(
      SpecWith(R"("weight_feature": "C1_weight")", R"("weight_feature": "I1")"),
      "spec.json: embedding_groups[0] (\"user\"): feature \"I1\" is "
      "already declared by numeric[0]");
  ExpectError(
      SpecWith(R"("weight_feature": "C1_weight")", R"("weight_feature": "C1")"),
      "spec.json: embedding_groups[0] (\"user\"): feature \"C1\" is "
      "already declared by categorical[0]");
  ExpectError(SpecWith(R"({"name": "items")", R"({"name": "user")"),
              "spec.json: embedding_groups[2] (\"user\"): name is already "
              "used by embedding_groups[0]");
}

TEST(FeatureSpecTest, GroupErrors) {
  ExpectError(SpecWith(R"({"name": "ads", )", "{"),
              "spec.json: embedding_groups[1]: name is missing");
  ExpectError(SpecWith(R"({"name": "ads", )", R"({"name": "", )"),
              "spec.json: embedding_groups[1]: name must not be empty");
  ExpectError(SpecWith(R"("dim": 8)", R"("dim": 8, "dimension": 8)"),
              "spec.json: embedding_groups[1] (\"ads\"): unknown field "
              "\"dimension\" (the fields are name, features, dim, combiner, "
              "weight_feature, admission, eviction)");
  ExpectError(SpecWith(R"("features": ["C2", "C4"], )", ""),
              "spec.json: embedding_groups[1] (\"ads\"): features is missing");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"("C2")"),
              "spec.json: embedding_groups[1] (\"ads\"): features must be a "
              "list of names, got the string \"C2\"");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"(["C2", 4])"),
              "spec.json: embedding_groups[1] (\"ads\"): features[1] must be "
              "a string, got the number 4");
  ExpectError(SpecWith(R"(["C2", "C4"])", "[]"),
              "spec.json: embedding_groups[1] (\"ads\"): features must name "
              "at least one categorical feature");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"(["C2", "C5"])"),
              "spec.json: embedding_groups[1] (\"ads\"): features[1]: unknown "
              "feature \"C5\" (not in the categorical list)");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"(["C2", "I2"])"),
              "spec.json: embedding_groups[1] (\"ads\"): features[1]: feature "
              "\"I2\" is not categorical (it is numeric[1])");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"(["clicked"])"),
              "spec.json: embedding_groups[1] (\"ads\"): features[0]: feature "
              "\"clicked\" is not categorical (it is label)");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"(["C2", "C4", "C2"])"),
              "spec.json: embedding_groups[1] (\"ads\"): features[2]: feature "
              "\"C2\" is already in embedding group \"ads\"");
  ExpectError(SpecWith(R"(["C3"])", R"(["C3", "C1"])"),
              "spec.json: embedding_groups[2] (\"items\"): features[1]: "
              "feature \"C1\" is already in embedding group \"user\"");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"(["C2", "C3"])"),
              "spec.json: embedding_groups[1] (\"ads\"): features[1]: feature "
              "\"C3\" (kind hashed, 0 buckets) differs from feature \"C2\" "
              "(kind hash_bucket, 100000 buckets); the features of one group "
              "share one table");
  ExpectError(
      SpecWith(R"({"name": "C4", "kind": "hash_bucket", "buckets": 100000})",
               R"({"name": "C4", "kind": "hash_bucket", "buckets": 10})"),
      "spec.json: embedding_groups[1] (\"ads\"): features[1]: feature "
      "\"C4\" (kind hash_bucket, 10 buckets) differs from feature "
      "\"C2\" (kind hash_bucket, 100000 buckets); the features of one "
      "group share one table");
  ExpectError(SpecWith(R"("features": ["C2", "C4"], "dim": 8)",
                       R"("features": ["C2", "C4"])"),
              "spec.json: embedding_groups[1] (\"ads\"): dim is missing");
  ExpectError(SpecWith(R"("dim": 8)", R"("dim": 0)"),
              "spec.json: embedding_groups[1] (\"ads\"): dim must be at least "
              "1, not 0");
  ExpectError(SpecWith(R"("dim": 8)", R"("dim": "8")"),
              "spec.json: embedding_groups[1] (\"ads\"): dim must be an "
              "integer, got the string \"8\"");
  ExpectError(SpecWith(R"("combiner": "sqrtn")", R"("combiner": "max")"),
              "spec.json: embedding_groups[2] (\"items\"): unknown combiner "
              "\"max\" (the combiners are sum, mean, sqrtn)");
  ExpectError(SpecWith(R"("combiner": "sqrtn")", R"("combiner": true)"),
              "spec.json: embedding_groups[2] (\"items\"): combiner must be a "
              "string, got the boolean true");
  ExpectError(
      SpecWith(R"("weight_feature": "C1_weight")", R"("weight_feature": 1)"),
      "spec.json: embedding_groups[0] (\"user\"): weight_feature must "
      "be a string, got the number 1");
  ExpectError(
      SpecWith(R"("weight_feature": "C1_weight")", R"("weight_feature": "")"),
      "spec.json: embedding_groups[0] (\"user\"): weight_feature must "
      "not be empty (leave it out for weights of 1)");
  ExpectError(SpecWith(R"("dim": 8)", R"("dim": 8, "weight_feature": "w")"),
              "spec.json: embedding_groups[1] (\"ads\"): weight_feature needs "
              "a group of one feature, not 2 (the weights are matched to one "
              "feature's ids)");
  ExpectError(SpecWith(R"(["C2", "C4"])", R"(["C2"])"),
              "spec.json: categorical[3] (\"C4\"): is in no embedding group "
              "(every categorical feature needs a table)");
}

// kSpec with the "ads" group given `policy` (its admission and eviction
// fields, as JSON members).
std::string SpecWithPolicy(absl::string_view policy) {
  return SpecWith(R"("dim": 8)", absl::StrCat(R"("dim": 8, )", policy));
}

TEST(FeatureSpecTest, ParsesTablePolicies) {
  absl::StatusOr<FeatureSpec> spec = ParseFeatureSpec(
      SpecWithPolicy(R"("admission": {"policy": "min_count", "min_count": 3,
                                      "unknown": "shared_row",
                                      "sketch_width": 4096},
                        "eviction": {"max_rows": 1000000, "ttl_steps": 500})"),
      "spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const TablePolicy& ads = spec->groups[1].policy;
  EXPECT_EQ(ads.admission.kind, AdmissionKind::kMinCount);
  EXPECT_EQ(ads.admission.min_count, 3);
  EXPECT_EQ(ads.admission.unknown, UnknownRow::kSharedRow);
  EXPECT_EQ(ads.admission.sketch_width, 4096);
  EXPECT_EQ(ads.admission.probability, 1.0);
  EXPECT_EQ(ads.eviction.max_rows, 1000000);
  EXPECT_EQ(ads.eviction.ttl_steps, 500);
  // The groups without policies keep every id for ever.
  EXPECT_TRUE(spec->groups[0].policy.admits_all());
  EXPECT_FALSE(spec->groups[0].policy.evicts());
  EXPECT_EQ(DescribePolicyDifference(spec->groups[2].policy, TablePolicy()),
            "");

  spec =
      ParseFeatureSpec(SpecWithPolicy(R"("admission": {"policy": "probability",
                                      "probability": 0.25},
                        "eviction": {"ttl_steps": 1})"),
                       "spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const TablePolicy& sampled = spec->groups[1].policy;
  EXPECT_EQ(sampled.admission.kind, AdmissionKind::kProbability);
  EXPECT_EQ(sampled.admission.probability, 0.25);
  EXPECT_EQ(sampled.admission.unknown, UnknownRow::kZeros);  // the default
  EXPECT_EQ(sampled.eviction.max_rows, 0);
  EXPECT_EQ(sampled.eviction.ttl_steps, 1);

  // Eviction alone, admission "always" spelt out.
  spec = ParseFeatureSpec(SpecWithPolicy(R"("admission": {"policy": "always"},
                        "eviction": {"max_rows": 10})"),
                          "spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->groups[1].policy.admits_all());
  EXPECT_EQ(spec->groups[1].policy.eviction.max_rows, 10);
  EXPECT_FALSE(spec->groups[1].policy.eviction.ttl_steps.has_value());
}

TEST(FeatureSpecTest, AdmissionErrors) {
  const std::string ads = "spec.json: embedding_groups[1] (\"ads\")";
  ExpectError(SpecWithPolicy(R"("admission": "min_count")"),
              ads +
                  ": admission must be an object, got the string "
                  "\"min_count\"");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "lfu"})"),
              ads +
                  ".admission.policy: unknown policy \"lfu\"; expected "
                  "always, min_count or probability");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": 2})"),
              ads + ".admission.policy: must be a string, got the number 2");
  ExpectError(SpecWithPolicy(R"("admission": {"min_count": 2})"),
              ads +
                  ".admission: policy is missing (always, min_count or "
                  "probability)");
  ExpectError(
      SpecWithPolicy(R"("admission": {"policy": "min_count", "min_cont": 2})"),
      ads +
          ".admission: unknown field \"min_cont\" (the fields are policy, "
          "min_count, probability, unknown, sketch_width)");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "min_count"})"),
              ads +
                  ".admission: min_count is missing (policy min_count "
                  "admits an id once pulls have asked for it that many "
                  "times)");
  ExpectError(SpecWithPolicy(
                  R"("admission": {"policy": "min_count", "min_count": -1})"),
              ads +
                  ".admission.min_count: must be at least 1 under policy "
                  "min_count, not -1");
  ExpectError(
      SpecWithPolicy(R"("admission": {"policy": "min_count", "min_count": 0})"),
      ads +
          ".admission.min_count: must be at least 1 under policy "
          "min_count, not 0");
  ExpectError(SpecWithPolicy(
                  R"("admission": {"policy": "min_count", "min_count": 1.5})"),
              ads +
                  ".admission.min_count: must be an integer, got the "
                  "number 1.5");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "always",
                                              "min_count": 2})"),
              ads +
                  ".admission.min_count: applies to policy min_count only, "
                  "not to policy always");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "probability"})"),
              ads +
                  ".admission: probability is missing (policy probability "
                  "admits an id without a row with that probability at "
                  "each pull)");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "probability",
                                              "probability": 1.5})"),
              ads + ".admission.probability: must be in (0, 1], not 1.5");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "probability",
                                              "probability": 0})"),
              ads + ".admission.probability: must be in (0, 1], not 0");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "probability",
                                              "probability": "1/2"})"),
              ads +
                  ".admission.probability: must be a number, got the "
                  "string \"1/2\"");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "min_count",
                                              "min_count": 2,
                                              "probability": 0.5})"),
              ads +
                  ".admission.probability: applies to policy probability "
                  "only, not to policy min_count");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "min_count",
                                              "min_count": 2,
                                              "unknown": "ones"})"),
              ads +
                  ".admission.unknown: unknown row \"ones\"; expected "
                  "zeros or shared_row");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "always",
                                              "unknown": "zeros"})"),
              ads +
                  ".admission.unknown: applies to policies min_count and "
                  "probability only, not to policy always");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "min_count",
                                              "min_count": 2,
                                              "sketch_width": 1000})"),
              ads +
                  ".admission.sketch_width: must be a power of two from 16 "
                  "to 2^30, not 1000");
  ExpectError(SpecWithPolicy(R"("admission": {"policy": "probability",
                                              "probability": 0.5,
                                              "sketch_width": 1024})"),
              ads +
                  ".admission.sketch_width: applies to policy min_count "
                  "only, not to policy probability");
}

TEST(FeatureSpecTest, EvictionErrors) {
  const std::string ads = "spec.json: embedding_groups[1] (\"ads\")";
  ExpectError(SpecWithPolicy(R"("eviction": [])"),
              ads + ": eviction must be an object, got a list");
  ExpectError(SpecWithPolicy(R"("eviction": {"max_row": 5})"),
              ads +
                  ".eviction: unknown field \"max_row\" (the fields are "
                  "max_rows, ttl_steps)");
  ExpectError(SpecWithPolicy(R"("eviction": {"max_rows": -1})"),
              ads +
                  ".eviction.max_rows: must be at least 0 (0: unbounded), "
                  "not -1");
  ExpectError(SpecWithPolicy(R"("eviction": {"max_rows": "1M"})"),
              ads +
                  ".eviction.max_rows: must be an integer, got the string "
                  "\"1M\"");
  ExpectError(SpecWithPolicy(R"("eviction": {"ttl_steps": 0})"),
              ads +
                  ".eviction.ttl_steps: must be at least 1 (leave it out "
                  "for rows that never expire), not 0");
  ExpectError(SpecWithPolicy(R"("eviction": {"ttl_steps": -5})"),
              ads +
                  ".eviction.ttl_steps: must be at least 1 (leave it out "
                  "for rows that never expire), not -5");
  ExpectError(
      SpecWithPolicy(R"("eviction": {"ttl_steps": 18446744073709551615})"),
      ads + ".eviction.ttl_steps: 18446744073709551615 is too large");
}

// A spec built in code gets the same checks, with paths into its vectors.
TEST(FeatureSpecTest, CheckFeatureSpecChecksSpecsBuiltInCode) {
  absl::StatusOr<FeatureSpec> parsed = ParseFeatureSpec(kSpec, "spec.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(CheckFeatureSpec(*parsed, "code").ok());
  {
    FeatureSpec spec = *parsed;
    spec.categorical[2].buckets = 7;
    absl::Status status = CheckFeatureSpec(spec, "code");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(),
              "code: categorical[2] (\"C3\"): buckets must be 0 for kind "
              "hashed, whose ids are kept whole, not 7");
  }
  {
    FeatureSpec spec = *parsed;
    spec.numeric[1].default_value = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(CheckFeatureSpec(spec, "code").message(),
              "code: numeric[1] (\"I2\"): default must be a finite number, "
              "not nan");
  }
  {
    FeatureSpec spec = *parsed;
    spec.groups[1].combiner = static_cast<Combiner>(7);
    EXPECT_EQ(CheckFeatureSpec(spec, "code").message(),
              "code: embedding_groups[1] (\"ads\"): unknown combiner 7");
  }
  {
    FeatureSpec spec = *parsed;
    spec.categorical[0].kind = static_cast<CategoricalKind>(9);
    EXPECT_EQ(CheckFeatureSpec(spec, "code").message(),
              "code: categorical[0] (\"C1\"): unknown kind 9");
  }
  {
    FeatureSpec spec = *parsed;
    spec.groups[2].policy.admission.min_count = -1;  // under policy always
    EXPECT_EQ(CheckFeatureSpec(spec, "code").message(),
              "code: embedding_groups[2] (\"items\").admission.min_count: "
              "must be at least 0, not -1");
  }
  {
    FeatureSpec spec = *parsed;
    spec.groups[2].policy.admission.kind = static_cast<AdmissionKind>(5);
    EXPECT_EQ(CheckFeatureSpec(spec, "code").message(),
              "code: embedding_groups[2] (\"items\").admission.policy: "
              "unknown policy 5");
  }
  {
    FeatureSpec spec = *parsed;
    spec.groups[0].policy.eviction.max_rows = -1;
    EXPECT_EQ(CheckFeatureSpec(spec, "code").message(),
              "code: embedding_groups[0] (\"user\").eviction.max_rows: "
              "must be at least 0 (0: unbounded), not -1");
  }
  {
    FeatureSpec spec = *parsed;
    spec.groups[0].policy.eviction.ttl_steps = 0;
    EXPECT_EQ(CheckFeatureSpec(spec, "code").message(),
              "code: embedding_groups[0] (\"user\").eviction.ttl_steps: "
              "must be at least 1 (leave it out for rows that never "
              "expire), not 0");
  }
}

TEST(FeatureSpecTest, ReadsAFile) {
  TestDir dir;
  const std::string path = dir.WriteFile("spec.json", kSpec);
  absl::StatusOr<FeatureSpec> spec = ReadFeatureSpec(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->groups.size(), 3u);

  const std::string bad =
      dir.WriteFile("bad.json", R"({"label": "y", "numeric": [{"name": 1}]})");
  EXPECT_EQ(ReadFeatureSpec(bad).status().message(),
            absl::StrCat(bad,
                         ": numeric[0]: name must be a string, got the "
                         "number 1"));

  absl::StatusOr<FeatureSpec> missing = ReadFeatureSpec(dir.path() + "/none");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr(dir.path() + "/none"));
}

}  // namespace
}  // namespace distrt
