#include "runtime/ps/spec_proto.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/variable.pb.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/table_policy.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

HashEmbeddingSpec SpecWithPolicy() {
  HashEmbeddingSpec spec;
  spec.name = "C1";
  spec.dim = 16;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.policy.admission.kind = AdmissionKind::kMinCount;
  spec.policy.admission.min_count = 3;
  spec.policy.admission.probability = 0.5;
  spec.policy.admission.unknown = UnknownRow::kSharedRow;
  spec.policy.admission.sketch_width = 4096;
  spec.policy.eviction.max_rows = 1000000;
  spec.policy.eviction.ttl_steps = 500;
  return spec;
}

HashEmbeddingSpec RoundTrip(const HashEmbeddingSpec& spec) {
  ps::HashTableSpec proto;
  HashSpecToProto(spec, &proto);
  // Through the bytes, as over the wire or in a checkpoint header.
  ps::HashTableSpec parsed;
  EXPECT_TRUE(parsed.ParseFromString(proto.SerializeAsString()));
  absl::StatusOr<HashEmbeddingSpec> back = HashSpecFromProto(parsed);
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *back : HashEmbeddingSpec();
}

TEST(HashSpecProtoTest, PolicyRoundTrips) {
  const HashEmbeddingSpec spec = SpecWithPolicy();
  const HashEmbeddingSpec back = RoundTrip(spec);
  EXPECT_EQ(back.name, "C1");
  EXPECT_EQ(back.dim, 16);
  EXPECT_EQ(DescribeHashSpecDifference(spec, back), "");
  EXPECT_EQ(back.policy.admission.kind, AdmissionKind::kMinCount);
  EXPECT_EQ(back.policy.admission.min_count, 3);
  EXPECT_EQ(back.policy.admission.probability, 0.5);
  EXPECT_EQ(back.policy.admission.unknown, UnknownRow::kSharedRow);
  EXPECT_EQ(back.policy.admission.sketch_width, 4096);
  EXPECT_EQ(back.policy.eviction.max_rows, 1000000);
  EXPECT_EQ(back.policy.eviction.ttl_steps, 500);
}

TEST(HashSpecProtoTest, DefaultPolicyRoundTripsWithoutTtl) {
  HashEmbeddingSpec spec;
  spec.name = "C2";
  spec.dim = 4;
  const HashEmbeddingSpec back = RoundTrip(spec);
  EXPECT_EQ(DescribeHashSpecDifference(spec, back), "");
  EXPECT_FALSE(back.policy.eviction.ttl_steps.has_value());
  EXPECT_TRUE(back.policy.admits_all());
  EXPECT_FALSE(back.policy.evicts());

  // A TTL of 0 is kept as set (and then refused by validation), not taken
  // for "never expire".
  spec.policy.eviction.ttl_steps = 0;
  EXPECT_EQ(RoundTrip(spec).policy.eviction.ttl_steps, 0);
}

TEST(HashSpecProtoTest, ZeroOnTheWireMeansTheDefault) {
  // What a sender that knows no policy writes: nothing at all.
  ps::HashTableSpec proto;
  proto.set_name("old");
  proto.set_dim(8);
  absl::StatusOr<HashEmbeddingSpec> spec = HashSpecFromProto(proto);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const TablePolicy defaults;
  EXPECT_EQ(DescribePolicyDifference(spec->policy, defaults), "");
  EXPECT_EQ(spec->policy.admission.probability, 1.0);
  EXPECT_EQ(spec->policy.admission.sketch_width,
            defaults.admission.sketch_width);
  EXPECT_TRUE(ValidateTablePolicy(spec->policy, "old").ok());
}

TEST(HashSpecProtoTest, UnknownPolicyFromTheWireNamesTableAndField) {
  ps::HashTableSpec proto;
  proto.set_name("C1");
  proto.set_dim(8);
  proto.mutable_admission()->set_policy(
      static_cast<ps::TableAdmission::Policy>(7));
  absl::StatusOr<HashEmbeddingSpec> spec = HashSpecFromProto(proto);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "hash embedding table \"C1\": admission.policy is 7, not a known "
            "policy (ALWAYS, MIN_COUNT, PROBABILITY)");

  proto.mutable_admission()->set_policy(ps::TableAdmission::ALWAYS);
  proto.mutable_admission()->set_unknown(
      static_cast<ps::TableAdmission::Unknown>(-2));
  spec = HashSpecFromProto(proto);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "hash embedding table \"C1\": admission.unknown is -2, not a known "
            "choice (ZEROS, SHARED_ROW)");
}

TEST(HashSpecProtoTest, OutOfRangeEnumIsSentAsItIsAndRefused) {
  HashEmbeddingSpec spec = SpecWithPolicy();
  spec.policy.admission.kind = static_cast<AdmissionKind>(5);
  ps::HashTableSpec proto;
  HashSpecToProto(spec, &proto);
  absl::StatusOr<HashEmbeddingSpec> back = HashSpecFromProto(proto);
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(back.status().message(), HasSubstr("admission.policy is 5"));
}

TEST(DescribeHashSpecDifferenceTest, ReportsPolicyAfterOtherFields) {
  const HashEmbeddingSpec a = SpecWithPolicy();
  HashEmbeddingSpec b = a;
  b.policy.eviction.max_rows = 10;
  EXPECT_EQ(DescribeHashSpecDifference(a, b),
            "eviction.max_rows 1000000 vs 10");
  b.optimizer.kind = OptimizerKind::kSgd;
  EXPECT_EQ(DescribeHashSpecDifference(a, b),
            "optimizer adagrad vs sgd, eviction.max_rows 1000000 vs 10");
  b = a;
  b.dim = 8;
  b.policy.eviction.ttl_steps.reset();
  // A dim differs first and alone: nothing else is comparable.
  EXPECT_EQ(DescribeHashSpecDifference(a, b), "dim 16 vs 8");
}

}  // namespace
}  // namespace distrt
