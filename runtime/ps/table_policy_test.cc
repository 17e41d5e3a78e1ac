#include "runtime/ps/table_policy.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// The message ValidateTablePolicy gives for `policy` on table "C1"; empty
// when it is valid (and then a failure is recorded if `expect_error`).
std::string ErrorOf(const TablePolicy& policy) {
  absl::Status s = ValidateTablePolicy(policy, "C1");
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(ValidateTablePolicyTest, DefaultIsValidAdmitsAllAndNeverEvicts) {
  TablePolicy policy;
  EXPECT_TRUE(ValidateTablePolicy(policy, "C1").ok());
  EXPECT_TRUE(policy.admits_all());
  EXPECT_FALSE(policy.evicts());
}

TEST(ValidateTablePolicyTest, AcceptsEveryPolicyWithinBounds) {
  TablePolicy p;
  p.admission.kind = AdmissionKind::kMinCount;
  p.admission.min_count = 1;
  p.admission.unknown = UnknownRow::kSharedRow;
  p.admission.sketch_width = 16;
  p.eviction.max_rows = 1;
  p.eviction.ttl_steps = 1;
  EXPECT_EQ(ErrorOf(p), "");
  EXPECT_FALSE(p.admits_all());
  EXPECT_TRUE(p.evicts());

  p.admission.sketch_width = int64_t{1} << 30;
  EXPECT_EQ(ErrorOf(p), "");

  TablePolicy q;
  q.admission.kind = AdmissionKind::kProbability;
  q.admission.probability = 1e-9;
  EXPECT_EQ(ErrorOf(q), "");
  q.admission.probability = 1.0;
  EXPECT_EQ(ErrorOf(q), "");

  // Either eviction bound alone turns eviction on.
  TablePolicy ttl_only;
  ttl_only.eviction.ttl_steps = 100;
  EXPECT_TRUE(ttl_only.evicts());
  TablePolicy max_only;
  max_only.eviction.max_rows = 100;
  EXPECT_TRUE(max_only.evicts());
}

TEST(ValidateTablePolicyTest, NegativeMaxRows) {
  TablePolicy p;
  p.eviction.max_rows = -1;
  EXPECT_EQ(ErrorOf(p),
            "hash embedding table \"C1\": eviction.max_rows is -1, must be at "
            "least 0 (0: unbounded)");
}

TEST(ValidateTablePolicyTest, TtlBelowOne) {
  TablePolicy p;
  p.eviction.ttl_steps = 0;
  EXPECT_EQ(ErrorOf(p),
            "hash embedding table \"C1\": eviction.ttl_steps is 0, must be at "
            "least 1 (leave it unset for rows that never expire)");
  p.eviction.ttl_steps = -5;
  EXPECT_THAT(ErrorOf(p), HasSubstr("eviction.ttl_steps is -5"));
}

TEST(ValidateTablePolicyTest, MinCount) {
  TablePolicy p;
  p.admission.kind = AdmissionKind::kMinCount;
  p.admission.min_count = 0;
  EXPECT_EQ(ErrorOf(p),
            "hash embedding table \"C1\": admission.min_count is 0, must be "
            "at least 1 under the min_count policy");
  // Negative is refused under any policy.
  p.admission.kind = AdmissionKind::kAlways;
  p.admission.min_count = -3;
  EXPECT_EQ(ErrorOf(p),
            "hash embedding table \"C1\": admission.min_count is -3, must be "
            "at least 0");
  // Zero is harmless where min_count is not used.
  p.admission.min_count = 0;
  EXPECT_EQ(ErrorOf(p), "");
}

TEST(ValidateTablePolicyTest, ProbabilityOutsideZeroToOne) {
  for (double bad :
       {0.0, -0.5, 1.0000001, 2.0, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity()}) {
    TablePolicy p;
    p.admission.kind = AdmissionKind::kProbability;
    p.admission.probability = bad;
    const std::string error = ErrorOf(p);
    EXPECT_THAT(error, HasSubstr("hash embedding table \"C1\": "
                                 "admission.probability is "))
        << bad;
    EXPECT_THAT(error, HasSubstr("must be in (0, 1]")) << bad;
  }
}

TEST(ValidateTablePolicyTest, SketchWidth) {
  for (int64_t bad : {int64_t{0}, int64_t{-16}, int64_t{8}, int64_t{100},
                      int64_t{1} << 31, (int64_t{1} << 20) + 1}) {
    TablePolicy p;
    p.admission.kind = AdmissionKind::kMinCount;
    p.admission.min_count = 2;
    p.admission.sketch_width = bad;
    EXPECT_EQ(
        ErrorOf(p),
        absl::StrCat("hash embedding table \"C1\": "
                     "admission.sketch_width is ",
                     bad, ", must be a power of two from 16 to 1073741824"));
  }
}

TEST(ValidateTablePolicyTest, UnknownEnumValues) {
  TablePolicy p;
  p.admission.kind = static_cast<AdmissionKind>(7);
  EXPECT_EQ(ErrorOf(p),
            "hash embedding table \"C1\": admission.policy is 7, not a known "
            "policy (always, min_count, probability)");
  TablePolicy q;
  q.admission.unknown = static_cast<UnknownRow>(9);
  EXPECT_EQ(ErrorOf(q),
            "hash embedding table \"C1\": admission.unknown is 9, not a known "
            "choice (zeros, shared_row)");
}

TEST(TablePolicyNamesTest, AdmissionKindRoundTrips) {
  for (AdmissionKind kind : {AdmissionKind::kAlways, AdmissionKind::kMinCount,
                             AdmissionKind::kProbability}) {
    AdmissionKind parsed = AdmissionKind::kAlways;
    if (kind == AdmissionKind::kAlways) parsed = AdmissionKind::kMinCount;
    ASSERT_TRUE(ParseAdmissionKind(AdmissionKindName(kind), &parsed).ok());
    EXPECT_EQ(parsed, kind);
  }
  EXPECT_EQ(AdmissionKindName(AdmissionKind::kMinCount), "min_count");
  AdmissionKind kind = AdmissionKind::kMinCount;
  absl::Status s = ParseAdmissionKind("sometimes", &kind);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unknown admission policy \"sometimes\" (expected always, "
            "min_count or probability)");
  EXPECT_EQ(kind, AdmissionKind::kMinCount);  // untouched
}

TEST(TablePolicyNamesTest, UnknownRowRoundTrips) {
  UnknownRow parsed = UnknownRow::kZeros;
  ASSERT_TRUE(ParseUnknownRow("shared_row", &parsed).ok());
  EXPECT_EQ(parsed, UnknownRow::kSharedRow);
  ASSERT_TRUE(ParseUnknownRow("zeros", &parsed).ok());
  EXPECT_EQ(parsed, UnknownRow::kZeros);
  EXPECT_EQ(UnknownRowName(UnknownRow::kSharedRow), "shared_row");
  absl::Status s = ParseUnknownRow("Zeros", &parsed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"Zeros\""));
  EXPECT_THAT(s.message(), HasSubstr("expected zeros or shared_row"));
}

TEST(DescribePolicyDifferenceTest, EmptyWhenEqual) {
  TablePolicy a;
  a.admission.kind = AdmissionKind::kMinCount;
  a.admission.min_count = 3;
  a.eviction.ttl_steps = 10;
  EXPECT_EQ(DescribePolicyDifference(a, a), "");
  EXPECT_EQ(DescribePolicyDifference(TablePolicy(), TablePolicy()), "");
}

TEST(DescribePolicyDifferenceTest, NamesEachFieldThatDiffers) {
  TablePolicy a;
  TablePolicy b;
  a.eviction.max_rows = 10;
  b.eviction.max_rows = 20;
  EXPECT_EQ(DescribePolicyDifference(a, b), "eviction.max_rows 10 vs 20");

  b = a;
  b.eviction.ttl_steps = 5;
  EXPECT_EQ(DescribePolicyDifference(a, b), "eviction.ttl_steps unset vs 5");

  b = a;
  b.admission.kind = AdmissionKind::kMinCount;
  b.admission.min_count = 2;
  EXPECT_EQ(DescribePolicyDifference(a, b),
            "admission.policy always vs min_count, admission.min_count 0 vs 2");

  b = a;
  b.admission.kind = AdmissionKind::kProbability;
  b.admission.probability = 0.25;
  b.admission.unknown = UnknownRow::kSharedRow;
  b.admission.sketch_width = 1024;
  EXPECT_EQ(DescribePolicyDifference(a, b),
            "admission.policy always vs probability, admission.probability 1 "
            "vs 0.25, admission.unknown zeros vs shared_row, "
            "admission.sketch_width 1048576 vs 1024");
}

}  // namespace
}  // namespace distrt
