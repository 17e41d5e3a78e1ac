#include "runtime/ps/initializer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace distrt {
namespace {

std::vector<float> Fill(const InitializerSpec& spec, int64_t first, int n) {
  std::vector<float> out(n);
  FillInitialValues(spec, first, absl::MakeSpan(out));
  return out;
}

TEST(InitializerTest, ZerosAndConstant) {
  InitializerSpec spec;
  for (float v : Fill(spec, 0, 10)) EXPECT_EQ(v, 0.0f);
  spec.kind = InitializerSpec::Kind::kConstant;
  spec.value = 2.5f;
  for (float v : Fill(spec, 7, 10)) EXPECT_EQ(v, 2.5f);
}

TEST(InitializerTest, UniformStaysInRangeAndCoversIt) {
  InitializerSpec spec;
  spec.kind = InitializerSpec::Kind::kUniform;
  spec.minval = -1.0f;
  spec.maxval = 3.0f;
  spec.seed = 42;
  std::vector<float> values = Fill(spec, 0, 100000);
  double sum = 0;
  for (float v : values) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 3.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / values.size(), 1.0, 0.02);
}

TEST(InitializerTest, TruncatedNormalMomentsAndBounds) {
  InitializerSpec spec;
  spec.kind = InitializerSpec::Kind::kTruncatedNormal;
  spec.mean = 1.0f;
  spec.stddev = 0.5f;
  spec.seed = 7;
  std::vector<float> values = Fill(spec, 0, 200000);
  double sum = 0, sum_sq = 0;
  for (float v : values) {
    ASSERT_GT(v, 1.0f - 2 * 0.5f);
    ASSERT_LT(v, 1.0f + 2 * 0.5f);
    sum += v;
    sum_sq += (v - 1.0) * (v - 1.0);
  }
  EXPECT_NEAR(sum / values.size(), 1.0, 0.01);
  // A standard normal truncated to (-2, 2) has standard deviation 0.8796.
  EXPECT_NEAR(std::sqrt(sum_sq / values.size()), 0.5 * 0.8796, 0.01);
}

TEST(InitializerTest, ValuesDependOnlyOnSeedAndIndex) {
  InitializerSpec spec;
  spec.kind = InitializerSpec::Kind::kTruncatedNormal;
  spec.seed = 3;
  std::vector<float> whole = Fill(spec, 0, 100);
  std::vector<float> tail = Fill(spec, 60, 40);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(tail[i], whole[60 + i]);
  spec.seed = 4;
  EXPECT_NE(Fill(spec, 0, 100), whole);
}

TEST(InitializerTest, Validation) {
  InitializerSpec spec;
  spec.kind = InitializerSpec::Kind::kUniform;
  spec.minval = 1;
  spec.maxval = 1;
  EXPECT_EQ(ValidateInitializer(spec).message(),
            "uniform initializer needs finite minval < maxval, got [1, 1)");
  spec.kind = InitializerSpec::Kind::kTruncatedNormal;
  spec.stddev = 0;
  EXPECT_EQ(ValidateInitializer(spec).code(),
            absl::StatusCode::kInvalidArgument);
  spec.kind = InitializerSpec::Kind::kConstant;
  spec.value = NAN;
  EXPECT_EQ(ValidateInitializer(spec).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
