#include "runtime/ps/initializer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/util/splitmix64.h"

namespace distrt {
namespace {

// Uniform in [0, 1) from 53 random bits.
double Uniform01(uint64_t seed, int64_t index, uint64_t draw) {
  const uint64_t bits = SplitMix64(
      SplitMix64(seed) ^ SplitMix64(static_cast<uint64_t>(index) * 4 + draw));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// A standard normal sample within (-2, 2), by Box-Muller with rejection.
// Each try succeeds with probability 0.95; after 64 failed tries (odds about
// 1e-83) the mean is returned rather than looping forever.
double TruncatedStandardNormal(uint64_t seed, int64_t index) {
  constexpr double kTwoPi = 6.283185307179586;
  for (uint64_t attempt = 0; attempt < 64; ++attempt) {
    const uint64_t attempt_seed = seed + attempt * 0x632be59bd9b4e019ULL;
    const double u1 = 1.0 - Uniform01(attempt_seed, index, 0);  // (0, 1]
    const double u2 = Uniform01(attempt_seed, index, 1);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
    if (std::fabs(z) < 2.0) return z;
  }
  return 0.0;
}

}  // namespace

absl::Status ValidateInitializer(const InitializerSpec& spec) {
  switch (spec.kind) {
    case InitializerSpec::Kind::kZeros:
      return absl::OkStatus();
    case InitializerSpec::Kind::kConstant:
      if (!std::isfinite(spec.value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("constant initializer value ", spec.value,
                         " is not a finite number"));
      }
      return absl::OkStatus();
    case InitializerSpec::Kind::kUniform:
      if (!(spec.minval < spec.maxval) || !std::isfinite(spec.minval) ||
          !std::isfinite(spec.maxval)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "uniform initializer needs finite minval < maxval, got [",
            spec.minval, ", ", spec.maxval, ")"));
      }
      return absl::OkStatus();
    case InitializerSpec::Kind::kTruncatedNormal:
      if (!(spec.stddev > 0) || !std::isfinite(spec.stddev) ||
          !std::isfinite(spec.mean)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "truncated-normal initializer needs a finite mean and stddev > 0, "
            "got mean ",
            spec.mean, ", stddev ", spec.stddev));
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown initializer kind");
}

void FillInitialValues(const InitializerSpec& spec, int64_t first_index,
                       absl::Span<float> out) {
  // One loop per kind, over a raw pointer: a new hash-table row is filled on
  // the push or pull that first names it, and Span::operator[] is
  // bound-checked in Debian's hardened Abseil.
  float* to = out.data();
  const int64_t n = static_cast<int64_t>(out.size());
  // Wraps rather than overflows: a hash table passes id * dim, which may
  // wrap itself, and the index only feeds a hash.
  const auto index = [first_index](int64_t i) {
    return static_cast<int64_t>(static_cast<uint64_t>(first_index) +
                                static_cast<uint64_t>(i));
  };
  switch (spec.kind) {
    case InitializerSpec::Kind::kZeros:
      std::fill_n(to, n, 0.0f);
      return;
    case InitializerSpec::Kind::kConstant:
      std::fill_n(to, n, spec.value);
      return;
    case InitializerSpec::Kind::kUniform:
      for (int64_t i = 0; i < n; ++i) {
        to[i] = static_cast<float>(spec.minval +
                                   (spec.maxval - spec.minval) *
                                       Uniform01(spec.seed, index(i), 0));
      }
      return;
    case InitializerSpec::Kind::kTruncatedNormal:
      for (int64_t i = 0; i < n; ++i) {
        to[i] = static_cast<float>(
            spec.mean +
            spec.stddev * TruncatedStandardNormal(spec.seed, index(i)));
      }
      return;
  }
}

}  // namespace distrt
