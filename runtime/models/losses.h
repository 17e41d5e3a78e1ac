#ifndef DISTRT_RUNTIME_MODELS_LOSSES_H_
#define DISTRT_RUNTIME_MODELS_LOSSES_H_

// Cross-entropy losses computed from logits, in forms that neither overflow
// exp() nor take the log of 0 however large the logits get, as TensorFlow's
// sigmoid_cross_entropy_with_logits and log_softmax do. The gradient of each
// loss with respect to its logits is (probability - label).

#include "absl/types/span.h"

namespace distrt {

// 1 / (1 + exp(-logit)), without overflow for either sign.
float Sigmoid(float logit);

// -y log(sigmoid(z)) - (1 - y) log(1 - sigmoid(z)) for label y and logit z,
// as max(z, 0) - z y + log1p(exp(-|z|)).
double SigmoidCrossEntropy(float logit, float label);

// -log softmax(logits)[label], by the log-sum-exp of the logits shifted by
// their maximum. Writes softmax(logits) to `probabilities` (logits.size()).
// `label` must be in [0, logits.size()).
double SoftmaxCrossEntropy(absl::Span<const float> logits, int label,
                           absl::Span<float> probabilities);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_LOSSES_H_
