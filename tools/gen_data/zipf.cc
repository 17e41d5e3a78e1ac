#include "tools/gen_data/zipf.h"

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

// Below this |t| the series are exact to double precision and the library
// quotients would divide by (almost) zero.
constexpr double kSeriesThreshold = 1e-8;

// log1p(t) / t, continuous at t = 0.
double Log1pOverT(double t) {
  if (std::abs(t) > kSeriesThreshold) return std::log1p(t) / t;
  return 1 - t * (0.5 - t * (1.0 / 3 - t * 0.25));
}

// expm1(t) / t, continuous at t = 0.
double Expm1OverT(double t) {
  if (std::abs(t) > kSeriesThreshold) return std::expm1(t) / t;
  return 1 + t * 0.5 * (1 + t * (1.0 / 3) * (1 + t * 0.25));
}

}  // namespace

absl::StatusOr<ZipfSampler> ZipfSampler::Create(int64_t n, double exponent) {
  if (n < 1 || n > kMaxN) {
    return absl::InvalidArgumentError(
        absl::StrCat("Zipf vocabulary size n must be in 1..2^53, got ", n));
  }
  // Written so that NaN fails too.
  if (!(exponent > 0 && exponent <= kMaxExponent)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Zipf exponent must be in (0, ", kMaxExponent, "], got ", exponent));
  }
  return ZipfSampler(static_cast<double>(n), exponent);
}

ZipfSampler::ZipfSampler(double n, double exponent)
    : n_(n), exponent_(exponent) {
  h_integral_x1_ = HIntegral(1.5) - 1;
  h_integral_n_ = HIntegral(n_ + 0.5);
  // The acceptance region of rank 2 in x: [H^-1(H(5/2) - h(2)), 5/2].
  squeeze_ = 2 - HIntegralInverse(HIntegral(2.5) - Hat(2));
}

double ZipfSampler::HIntegral(double x) const {
  const double log_x = std::log(x);
  return Expm1OverT((1 - exponent_) * log_x) * log_x;
}

double ZipfSampler::HIntegralInverse(double y) const {
  double t = y * (1 - exponent_);
  // For s > 1, H is bounded by 1 / (s - 1) and t > -1 for every y it
  // reaches; rounding can still give -1 - epsilon, whose log1p is NaN. At -1
  // the inverse is +inf, which Sample clamps to rank n.
  if (t < -1) t = -1;
  return std::exp(Log1pOverT(t) * y);
}

}  // namespace distrt
