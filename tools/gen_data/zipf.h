#ifndef DISTRT_TOOLS_GEN_DATA_ZIPF_H_
#define DISTRT_TOOLS_GEN_DATA_ZIPF_H_

// ZipfSampler: draws ranks k in 1..n with P(k) proportional to k^-s (a
// Zipf, or zeta-like, distribution over a finite vocabulary), in O(1) time
// and memory per draw whatever n is: no table of the n probabilities, so a
// vocabulary of 10^7 (or 10^15) ids costs as little as one of 10.
//
// The method is rejection-inversion (W. Hörmann and G. Derflinger,
// "Rejection-inversion to generate variates from monotone discrete
// distributions", ACM TOMACS 6(3), 1996), written here from the paper:
//
//   The hat h(x) = x^-s is convex and decreasing, so over [k - 1/2,
//   k + 1/2] its integral is at least h(k), the unnormalised mass of rank
//   k. Let H be an antiderivative of h. Draw u uniformly between H(3/2) - 1
//   and H(n + 1/2), invert x = H^-1(u), round to the nearest rank k, and
//   accept k when u lies in the last h(k) of the hat's area over k's
//   interval: u >= H(k + 1/2) - h(k). Each rank is then accepted with
//   probability proportional to h(k), exactly the target. Starting at
//   H(3/2) - 1 instead of H(1/2) gives rank 1 exactly its own area (it is
//   always accepted), which keeps H finite for s >= 1 and the rejection
//   rate low: a few percent at most for the exponents of real data.
//   A "squeeze" accepts without evaluating H when x is within a distance
//   of k that is known to lie inside the acceptance region for every
//   k >= 2 (its value at k = 2 is the smallest).
//
// H(x) = (x^(1-s) - 1) / (1 - s), or log x for s = 1, is evaluated as
// log(x) * expm1(t) / t with t = (1 - s) log x, and its inverse as
// exp(y * log1p(t) / t) with t = (1 - s) y, so that exponents at or near 1
// need no special case and lose no precision.
//
// Thread-safe: Sample is const and the uniforms come from the caller.

#include <cmath>
#include <cstdint>

#include "absl/status/statusor.h"

namespace distrt {

class ZipfSampler {
 public:
  // Largest n: every rank is exactly representable as a double.
  static constexpr int64_t kMaxN = int64_t{1} << 53;
  // Largest exponent: beyond it h(k) = k^-s underflows for moderate k and
  // the distribution is rank 1 for any practical purpose.
  static constexpr double kMaxExponent = 64;

  // P(k) proportional to k^-exponent for k in 1..n. INVALID_ARGUMENT naming
  // the argument for n outside 1..kMaxN or an exponent outside
  // (0, kMaxExponent] (NaN included).
  static absl::StatusOr<ZipfSampler> Create(int64_t n, double exponent);

  int64_t n() const { return static_cast<int64_t>(n_); }
  double exponent() const { return exponent_; }

  // One rank in 1..n. `uniform()` returns doubles uniform in [0, 1); it is
  // called about 1.0x to 1.1x per draw (once per attempt).
  template <typename UniformFn>
  int64_t Sample(UniformFn&& uniform) const {
    while (true) {
      // In (H(3/2) - 1, H(n + 1/2)]: the top end for a uniform of 0.
      const double u =
          h_integral_n_ - uniform() * (h_integral_n_ - h_integral_x1_);
      const double x = HIntegralInverse(u);
      // The nearest rank, clamped: rounding can put x a hair outside
      // [1/2, n + 1/2], and for s > 1 an inverse of +inf (written so that
      // NaN, which cannot happen, would also land on n).
      double k = std::floor(x + 0.5);
      if (k < 1) {
        k = 1;
      } else if (!(k <= n_)) {
        k = n_;
      }
      if (k - x <= squeeze_ || u >= HIntegral(k + 0.5) - Hat(k)) {
        return static_cast<int64_t>(k);
      }
    }
  }

 private:
  ZipfSampler(double n, double exponent);

  // h(x) = x^-s.
  double Hat(double x) const { return std::exp(-exponent_ * std::log(x)); }
  // H(x) = integral of h from 1 to x.
  double HIntegral(double x) const;
  // The x with H(x) = y.
  double HIntegralInverse(double y) const;

  // Constant after construction.
  double n_;
  double exponent_;
  double h_integral_x1_;  // H(3/2) - 1: where rank 1's area starts
  double h_integral_n_;   // H(n + 1/2): where rank n's area ends
  double squeeze_;        // accept when k - x <= squeeze_
};

}  // namespace distrt

#endif  // DISTRT_TOOLS_GEN_DATA_ZIPF_H_
