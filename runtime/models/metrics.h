#ifndef DISTRT_RUNTIME_MODELS_METRICS_H_
#define DISTRT_RUNTIME_MODELS_METRICS_H_

// Metrics: evaluation metrics of a model's predictions, accumulated over
// batches and mergeable, so that each replica (and each worker) accumulates
// its own and the chief merges them into the metrics of all the examples.
//
// Every statistic is a sum or a count, so merging is exact and its order does
// not matter. AUC in particular comes from a fixed histogram of predicted
// probabilities (as tf.keras.metrics.AUC's thresholds, but finer), accurate
// to about 1e-4 when predictions are spread over (0, 1); ExactAuc below is the
// rank-based value it approximates.
//
// Not thread-safe: one Metrics per thread, then Merge.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/models/model.h"

namespace distrt {

class Metrics {
 public:
  // Probability buckets of the AUC histogram: [b / kAucBuckets,
  // (b + 1) / kAucBuckets), the last one including 1.
  static constexpr int kAucBuckets = 10000;

  // For predictions of `output`, `outputs_per_example` per example (1, or
  // the number of classes for kMulticlass).
  Metrics(ModelOutput output, int outputs_per_example);

  ModelOutput output() const { return output_; }
  int outputs_per_example() const { return outputs_per_example_; }

  // Adds a batch: its labels, the model's predictions for it (labels.size()
  // * outputs_per_example) and its summed loss (ModelStepResult::loss_sum).
  // INVALID_ARGUMENT, with nothing added, when the sizes disagree or a label
  // does not fit the output (binary: 0 or 1; multiclass: a class id),
  // naming the example.
  absl::Status Add(absl::Span<const float> labels,
                   absl::Span<const float> predictions, double loss_sum);

  // Adds everything `other` accumulated. INVALID_ARGUMENT, with nothing
  // added, when its output or outputs_per_example differ.
  absl::Status Merge(const Metrics& other);

  // Examples added.
  int64_t count() const { return count_; }
  // Summed loss / count; 0 before any example.
  double mean_loss() const;
  // Binary: the fraction with (prediction >= 0.5) == label; multiclass: with
  // the most probable class (the first on ties) == label. 0 before any
  // example and for regression.
  double accuracy() const;
  // Binary only: the area under the ROC curve from the histogram; NaN when
  // the examples so far are not of both labels, and for other outputs.
  double auc() const;
  // Regression only: sqrt(mean squared error); 0 before any example and for
  // other outputs.
  double rmse() const;

  // The metrics that fit the output, e.g. "loss=0.4123 accuracy=0.8125
  // auc=0.8810" (binary; auc left out while undefined), "loss=1.2034
  // accuracy=0.6000" (multiclass), "loss=0.0211 rmse=0.1453" (regression).
  std::string ToString() const;

 private:
  ModelOutput output_;
  int outputs_per_example_;
  int64_t count_ = 0;
  double loss_sum_ = 0;
  int64_t correct_ = 0;           // binary and multiclass
  double squared_error_sum_ = 0;  // regression
  // Binary: examples per probability bucket, by label. Empty otherwise.
  std::vector<int64_t> positives_;
  std::vector<int64_t> negatives_;
};

// The exact ROC AUC of `scores` for binary `labels` (> 0.5 is positive): the
// probability that a random positive scores above a random negative, ties
// counting one half (the Mann-Whitney statistic with averaged ranks). NaN
// when either label is absent. labels.size() == scores.size().
double ExactAuc(absl::Span<const float> labels, absl::Span<const float> scores);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_METRICS_H_
