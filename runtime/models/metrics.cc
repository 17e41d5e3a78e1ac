#include "runtime/models/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace distrt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The histogram bucket of a probability; out-of-range values (and NaN) go to
// the end buckets rather than out of the array.
int AucBucket(float probability) {
  if (!(probability > 0.0f)) return 0;
  const int bucket =
      static_cast<int>(static_cast<double>(probability) * Metrics::kAucBuckets);
  return std::min(bucket, Metrics::kAucBuckets - 1);
}

}  // namespace

Metrics::Metrics(ModelOutput output, int outputs_per_example)
    : output_(output), outputs_per_example_(outputs_per_example) {
  if (output_ == ModelOutput::kBinary) {
    positives_.assign(kAucBuckets, 0);
    negatives_.assign(kAucBuckets, 0);
  }
}

absl::Status Metrics::Add(absl::Span<const float> labels,
                          absl::Span<const float> predictions,
                          double loss_sum) {
  const int64_t n = static_cast<int64_t>(labels.size());
  if (static_cast<int64_t>(predictions.size()) != n * outputs_per_example_) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: ", predictions.size(), " predictions for ", n,
                     " examples of ", outputs_per_example_, " outputs each"));
  }
  for (int64_t i = 0; i < n; ++i) {
    const float label = labels[i];
    if (output_ == ModelOutput::kBinary && label != 0.0f && label != 1.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics: example ", i, ": label ", label, " is not 0 or 1"));
    }
    if (output_ == ModelOutput::kMulticlass &&
        (!(label >= 0.0f && label < outputs_per_example_) ||
         label != std::floor(label))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics: example ", i, ": label ", label,
          " is not a class id in [0, ", outputs_per_example_, ")"));
    }
  }

  count_ += n;
  loss_sum_ += loss_sum;
  for (int64_t i = 0; i < n; ++i) {
    const float label = labels[i];
    switch (output_) {
      case ModelOutput::kRegression: {
        const double error = static_cast<double>(predictions[i]) - label;
        squared_error_sum_ += error * error;
        break;
      }
      case ModelOutput::kBinary: {
        const float p = predictions[i];
        const bool positive = label == 1.0f;
        if ((p >= 0.5f) == positive) ++correct_;
        ++(positive ? positives_ : negatives_)[AucBucket(p)];
        break;
      }
      case ModelOutput::kMulticlass: {
        const float* row = &predictions[i * outputs_per_example_];
        const int predicted = static_cast<int>(
            std::max_element(row, row + outputs_per_example_) - row);
        if (predicted == static_cast<int>(label)) ++correct_;
        break;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Metrics::Merge(const Metrics& other) {
  if (other.output_ != output_ ||
      other.outputs_per_example_ != outputs_per_example_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics: cannot merge metrics of ", other.outputs_per_example_,
        " outputs of kind ", static_cast<int>(other.output_), " into ",
        outputs_per_example_, " of kind ", static_cast<int>(output_)));
  }
  count_ += other.count_;
  loss_sum_ += other.loss_sum_;
  correct_ += other.correct_;
  squared_error_sum_ += other.squared_error_sum_;
  for (size_t b = 0; b < positives_.size(); ++b) {
    positives_[b] += other.positives_[b];
    negatives_[b] += other.negatives_[b];
  }
  return absl::OkStatus();
}

double Metrics::mean_loss() const {
  return count_ == 0 ? 0.0 : loss_sum_ / count_;
}

double Metrics::accuracy() const {
  if (count_ == 0 || output_ == ModelOutput::kRegression) return 0.0;
  return static_cast<double>(correct_) / count_;
}

double Metrics::auc() const {
  if (output_ != ModelOutput::kBinary) return kNaN;
  const double num_positives =
      std::accumulate(positives_.begin(), positives_.end(), 0.0);
  const double num_negatives =
      std::accumulate(negatives_.begin(), negatives_.end(), 0.0);
  if (num_positives == 0 || num_negatives == 0) return kNaN;
  // Each positive beats the negatives in lower buckets and ties (one half)
  // with those in its own: ExactAuc with scores rounded to buckets.
  double wins = 0;
  double negatives_below = 0;
  for (int b = 0; b < kAucBuckets; ++b) {
    wins += positives_[b] * (negatives_below + 0.5 * negatives_[b]);
    negatives_below += negatives_[b];
  }
  return wins / (num_positives * num_negatives);
}

double Metrics::rmse() const {
  if (count_ == 0 || output_ != ModelOutput::kRegression) return 0.0;
  return std::sqrt(squared_error_sum_ / count_);
}

std::string Metrics::ToString() const {
  std::string out = absl::StrFormat("loss=%.4f", mean_loss());
  switch (output_) {
    case ModelOutput::kRegression:
      absl::StrAppendFormat(&out, " rmse=%.4f", rmse());
      break;
    case ModelOutput::kBinary:
      absl::StrAppendFormat(&out, " accuracy=%.4f", accuracy());
      if (const double a = auc(); !std::isnan(a)) {
        absl::StrAppendFormat(&out, " auc=%.4f", a);
      }
      break;
    case ModelOutput::kMulticlass:
      absl::StrAppendFormat(&out, " accuracy=%.4f", accuracy());
      break;
  }
  return out;
}

double ExactAuc(absl::Span<const float> labels,
                absl::Span<const float> scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks (1-based), tied scores sharing the average
  // of their ranks.
  double positive_rank_sum = 0;
  double num_positives = 0;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    while (end < order.size() && scores[order[end]] == scores[order[begin]]) {
      ++end;
    }
    const double average_rank = (begin + 1 + end) / 2.0;
    for (size_t k = begin; k < end; ++k) {
      if (labels[order[k]] > 0.5f) {
        positive_rank_sum += average_rank;
        ++num_positives;
      }
    }
    begin = end;
  }
  const double num_negatives =
      static_cast<double>(scores.size()) - num_positives;
  if (num_positives == 0 || num_negatives == 0) return kNaN;
  return (positive_rank_sum - num_positives * (num_positives + 1) / 2) /
         (num_positives * num_negatives);
}

}  // namespace distrt
