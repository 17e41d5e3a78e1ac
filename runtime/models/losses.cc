#include "runtime/models/losses.h"

#include <algorithm>
#include <cmath>

namespace distrt {

float Sigmoid(float logit) {
  // exp of a non-positive number only, so nothing overflows.
  if (logit >= 0) return 1.0f / (1.0f + std::exp(-logit));
  const float e = std::exp(logit);
  return e / (1.0f + e);
}

double SigmoidCrossEntropy(float logit, float label) {
  const double z = logit;
  return std::max(z, 0.0) - z * label + std::log1p(std::exp(-std::fabs(z)));
}

double SoftmaxCrossEntropy(absl::Span<const float> logits, int label,
                           absl::Span<float> probabilities) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float logit : logits) sum += std::exp(logit - max);
  const double log_sum_exp = max + std::log(sum);
  for (size_t c = 0; c < logits.size(); ++c) {
    probabilities[c] = static_cast<float>(std::exp(logits[c] - log_sum_exp));
  }
  return log_sum_exp - logits[label];
}

}  // namespace distrt
