#include "tools/gen_data/zipf.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// Uniform doubles in [0, 1) from a fixed seed.
class Uniform {
 public:
  explicit Uniform(uint64_t seed) : engine_(seed) {}
  double operator()() {
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  }

 private:
  std::mt19937_64 engine_;
};

ZipfSampler MakeSampler(int64_t n, double exponent) {
  absl::StatusOr<ZipfSampler> sampler = ZipfSampler::Create(n, exponent);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  return *std::move(sampler);
}

// The exact pmf k^-s / sum_j j^-s for k = 1..n, computed directly.
std::vector<double> ExactPmf(int64_t n, double exponent) {
  std::vector<double> pmf(n);
  double sum = 0;
  // Smallest terms first, for accuracy.
  for (int64_t k = n; k >= 1; --k) {
    pmf[k - 1] = std::pow(static_cast<double>(k), -exponent);
    sum += pmf[k - 1];
  }
  for (double& p : pmf) p /= sum;
  return pmf;
}

// Pearson's chi-square statistic of observed counts against expected
// probabilities, over `draws` draws.
double ChiSquare(const std::vector<int64_t>& counts,
                 const std::vector<double>& probabilities, int64_t draws) {
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probabilities[i] * static_cast<double>(draws);
    const double diff = static_cast<double>(counts[i]) - expected;
    chi2 += diff * diff / expected;
  }
  return chi2;
}

// A bound that a chi-square variable with `df` degrees of freedom exceeds
// with probability far below 1e-6 (mean df, sd sqrt(2 df); 7 sd above the
// mean). The draws are seeded, so a pass is a pass for good; the bound only
// says how unlikely a correct sampler is to fail for a new seed.
double ChiSquareBound(int df) { return df + 7 * std::sqrt(2.0 * df); }

struct PmfCase {
  int64_t n;
  double exponent;
};

class ZipfFrequencyTest : public ::testing::TestWithParam<PmfCase> {};

TEST_P(ZipfFrequencyTest, FrequenciesMatchTheExactPmf) {
  const auto [n, exponent] = GetParam();
  const ZipfSampler sampler = MakeSampler(n, exponent);
  const std::vector<double> pmf = ExactPmf(n, exponent);
  constexpr int64_t kDraws = 400000;
  std::vector<int64_t> counts(n, 0);
  Uniform uniform(12345);
  for (int64_t i = 0; i < kDraws; ++i) {
    const int64_t k = sampler.Sample(uniform);
    ASSERT_GE(k, 1);
    ASSERT_LE(k, n);
    ++counts[k - 1];
  }
  // Every bin's expected count is above 5 for these cases (the chi-square
  // approximation holds), the smallest being rank 60 at s = 2: ~68.
  for (int64_t k = 1; k <= n; ++k) {
    ASSERT_GT(pmf[k - 1] * kDraws, 5) << "rank " << k;
  }
  const double chi2 = ChiSquare(counts, pmf, kDraws);
  EXPECT_LT(chi2, ChiSquareBound(static_cast<int>(n) - 1))
      << "n=" << n << " s=" << exponent;
  // Rank 1's share within 5 standard errors, a direct check of the head.
  const double p1 = pmf[0];
  const double se = std::sqrt(p1 * (1 - p1) / kDraws);
  EXPECT_NEAR(static_cast<double>(counts[0]) / kDraws, p1, 5 * se);
}

INSTANTIATE_TEST_SUITE_P(Exponents, ZipfFrequencyTest,
                         ::testing::Values(PmfCase{60, 0.3},
                                           PmfCase{60, 0.999999},
                                           PmfCase{60, 1.0}, PmfCase{60, 1.1},
                                           PmfCase{60, 2.0}, PmfCase{2, 1.1},
                                           PmfCase{7, 5.0}),
                         [](const ::testing::TestParamInfo<PmfCase>& info) {
                           return "n" + std::to_string(info.param.n) + "_s" +
                                  std::to_string(static_cast<int>(
                                      std::lround(info.param.exponent * 1e6)));
                         });

TEST(ZipfSamplerTest, VocabularyOfOneAlwaysDrawsRankOne) {
  const ZipfSampler sampler = MakeSampler(1, 1.1);
  Uniform uniform(1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sampler.Sample(uniform), 1);
}

TEST(ZipfSamplerTest, ExtremeUniformsStayInRange) {
  for (double exponent : {0.5, 1.0, 1.1, 3.0, 64.0}) {
    const ZipfSampler sampler = MakeSampler(1000, exponent);
    // The largest double below 1, and 0: the two ends of the u range.
    for (double value : {0.0, std::nextafter(1.0, 0.0), 0.5}) {
      // `value` first; 0.5 for a retry, should `value` be rejected.
      const int64_t k = sampler.Sample(
          [value, calls = 0]() mutable { return calls++ == 0 ? value : 0.5; });
      EXPECT_GE(k, 1) << exponent;
      EXPECT_LE(k, 1000) << exponent;
    }
  }
  // A uniform of 0 is the top end of the hat's integral: rank n, whatever
  // the exponent.
  EXPECT_EQ(MakeSampler(1000, 1.1).Sample([] { return 0.0; }), 1000);
}

// A 10^7 vocabulary: the sampler is a few doubles, draws cost the same as
// for a small one, and the head of the distribution is right (the exact
// normaliser is summed here, in O(n), once).
TEST(ZipfSamplerTest, TenMillionIdsNeedNoTableAndHaveTheRightHead) {
  constexpr int64_t kN = 10'000'000;
  constexpr double kExponent = 1.1;
  static_assert(sizeof(ZipfSampler) <= 64, "no per-id state");
  const ZipfSampler sampler = MakeSampler(kN, kExponent);
  EXPECT_EQ(sampler.n(), kN);

  double normaliser = 0;
  for (int64_t k = kN; k >= 1; --k) {
    normaliser += std::pow(static_cast<double>(k), -kExponent);
  }
  constexpr int kHead = 20;
  // Ranks 1..kHead, and everything else as one bin.
  std::vector<double> probabilities(kHead + 1);
  double head = 0;
  for (int k = 1; k <= kHead; ++k) {
    probabilities[k - 1] = std::pow(k, -kExponent) / normaliser;
    head += probabilities[k - 1];
  }
  probabilities[kHead] = 1 - head;

  constexpr int64_t kDraws = 1'000'000;
  std::vector<int64_t> counts(kHead + 1, 0);
  int64_t max_rank = 0;
  Uniform uniform(99);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kDraws; ++i) {
    const int64_t k = sampler.Sample(uniform);
    ASSERT_GE(k, 1);
    ASSERT_LE(k, kN);
    max_rank = std::max(max_rank, k);
    ++counts[std::min<int64_t>(k, kHead + 1) - 1];
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(ChiSquare(counts, probabilities, kDraws), ChiSquareBound(kHead));
  // The tail is reached: P(k > 10^6) is about 10% here.
  EXPECT_GT(max_rank, 1'000'000);
  // About 0.1 s optimised; a table-based sampler would spend longer than
  // this building its 10^7-entry table. Generous for unoptimised and
  // sanitizer builds on a loaded machine.
  EXPECT_LT(seconds, 20) << kDraws << " draws";
}

TEST(ZipfSamplerTest, RejectsBadArguments) {
  absl::StatusOr<ZipfSampler> zero_n = ZipfSampler::Create(0, 1.1);
  EXPECT_EQ(zero_n.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zero_n.status().message(), HasSubstr("got 0"));

  EXPECT_EQ(ZipfSampler::Create(ZipfSampler::kMaxN + 1, 1.1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ZipfSampler::Create(ZipfSampler::kMaxN, 1.1).ok());

  for (double exponent : {0.0, -1.0, std::nan(""), 65.0, HUGE_VAL}) {
    absl::StatusOr<ZipfSampler> bad = ZipfSampler::Create(10, exponent);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument)
        << exponent;
    EXPECT_THAT(bad.status().message(), HasSubstr("exponent")) << exponent;
  }
}

}  // namespace
}  // namespace distrt
