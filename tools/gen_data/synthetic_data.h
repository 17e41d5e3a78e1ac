#ifndef DISTRT_TOOLS_GEN_DATA_SYNTHETIC_DATA_H_
#define DISTRT_TOOLS_GEN_DATA_SYNTHETIC_DATA_H_

// Synthetic training data with a known ground truth, written as LIBSVM text
// (the format runtime/input/libsvm_reader.h reads), so that a training run
// can be checked against the accuracy the true model reaches.
//
// The ground truth is a linear model: one weight vector (one per class for
// multiclass) drawn from the seed, and biases (see below). Each row holds
// `features_per_row` distinct feature ids drawn uniformly, with values
// uniform in [0.5, 1.5) (on a 1e-5 grid), or, when features_per_row >=
// num_features, every feature with a standard normal value (on a 1e-4 grid).
// Values lie on a decimal grid so that the file holds exactly the numbers
// the labels were computed from. Weights are scaled so that w.x has about
// unit variance; `noise` is therefore relative to a signal of scale 1.
//
//   binary:     label = 1 if w.x + b > 0 else 0, b chosen so that about
//               half of the rows are positive;
//   multiclass: label = argmax_k (w_k.x + b_k), the b_k chosen so that the
//               classes are about equally frequent;
//   regression: label = w.x + b + noise * N(0, 1), b ~ N(0, 1).
//
// Label noise for classification: with probability `noise` a row's label is
// replaced by a different label drawn uniformly, so the true model is right
// on about 1 - noise of the rows. That is the best any model can do in
// expectation while noise < 0.5 (binary) or noise < (K-1)/K (K classes).
//
// Determinism: the output is a function of the options alone, the same on
// every platform: random numbers come from std::mt19937_64 (whose sequence
// the C++ standard fixes) through this library's own transforms, never
// through std::*_distribution, whose algorithms differ between standard
// libraries. (std::log/std::cos may differ in the last bit between libms;
// that changes a file only if a value or a score falls within that bit of a
// rounding or decision boundary.)
// Rows do not depend on `rows`, `eval_fraction` or `noise`: a larger data
// set extends a smaller one with the same seed, and different noise levels
// change labels only.
//
// The functions are thread-safe.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace distrt {

enum class SyntheticTask { kBinary, kMulticlass, kRegression };

// "binary", "multiclass", "regression".
absl::string_view SyntheticTaskName(SyntheticTask task);
// The inverse of SyntheticTaskName; INVALID_ARGUMENT listing the names.
absl::StatusOr<SyntheticTask> ParseSyntheticTask(absl::string_view name);

struct SyntheticDataOptions {
  SyntheticTask task = SyntheticTask::kBinary;
  // Rows in both files together, at least 1.
  int64_t rows = 10000;
  // The feature ids are 0 .. num_features - 1, written 1-based as liblinear
  // does (LIBSVM index = id + 1).
  int64_t num_features = 1000;
  // Non-zeros per row; at least 1. When >= num_features every row holds
  // every feature (dense data).
  int64_t features_per_row = 10;
  // Multiclass only: 2 .. kMaxSyntheticClasses; the labels are 0 .. K-1.
  int num_classes = 3;
  // Binary and multiclass: the probability, in [0, 1], that a row's label
  // is replaced by a different one. Regression: the standard deviation
  // (>= 0) of the gaussian noise added to the target.
  double noise = 0.1;
  // The share of rows, in [0, 1), written to the eval file: the last
  // round(rows * eval_fraction) rows, at most rows - 1 (the train file is
  // never empty).
  double eval_fraction = 0.2;
  uint64_t seed = 1;
};

// Fitting the class biases costs O(K^2) per pass over a sample of rows, and
// beyond ~100 classes a sample of affordable size holds too few rows per
// class to balance them.
inline constexpr int kMaxSyntheticClasses = 100;

// OK, or INVALID_ARGUMENT whose message starts with the name of the first
// bad field, e.g. "num_features must be at least 1, got 0".
absl::Status ValidateSyntheticDataOptions(const SyntheticDataOptions& options);

// How many of options.rows go to the eval file (see eval_fraction).
// `options` must be valid.
int64_t SyntheticEvalRows(const SyntheticDataOptions& options);

// The model the labels come from. Copyable; a few hundred bytes unless the
// weights fit a cache (up to 2^23 of them), which it then holds.
class SyntheticGroundTruth {
 public:
  // INVALID_ARGUMENT as ValidateSyntheticDataOptions. Costs about as much as
  // generating a few thousand rows (the biases are fitted on a sample).
  static absl::StatusOr<SyntheticGroundTruth> Create(
      const SyntheticDataOptions& options);

  // 1 for binary and regression, num_classes for multiclass.
  int num_outputs() const { return num_outputs_; }
  // The weight of feature `id` (0-based) in output `output`; both must be
  // in range.
  double Weight(int output, int64_t id) const;
  double Bias(int output) const { return biases_[output]; }
  // w_output . x + b_output for a row given as 0-based ids and values.
  double Score(int output, absl::Span<const int64_t> ids,
               absl::Span<const double> values) const;
  // The noise-free label of a row: 0 or 1 (binary), the class (multiclass),
  // or the target without noise (regression).
  double Label(absl::Span<const int64_t> ids,
               absl::Span<const double> values) const;

 private:
  explicit SyntheticGroundTruth(const SyntheticDataOptions& options);
  double DrawWeight(int output, int64_t id) const;

  SyntheticTask task_;
  int64_t num_features_;
  int num_outputs_;
  uint64_t seed_;
  // Every weight makes w.x about unit-variance.
  double weight_scale_;
  std::vector<double> biases_;
  // Weight(k, id) at [k * num_features + id], when small enough to cache;
  // else empty and weights are recomputed from the seed on each use.
  std::vector<double> weights_;
};

struct SyntheticDataSummary {
  int64_t train_rows = 0;
  int64_t eval_rows = 0;
  // Binary and multiclass: rows per label over both files (size 2 or
  // num_classes). Empty for regression.
  std::vector<int64_t> class_counts;
  // Binary: the share of rows, over both files, labelled 1.
  double positive_fraction = 0;
  // Binary and multiclass: the share of eval rows whose label the true model
  // predicts, i.e. the accuracy a perfect learner reaches on the eval file.
  // 1 when noise is 0. NaN when there are no eval rows.
  double true_model_eval_accuracy = std::numeric_limits<double>::quiet_NaN();
  // Regression: the RMSE of the true model on the eval labels (the noise
  // realised, about options.noise), and the standard deviation of those
  // labels (the RMSE of always predicting their mean), for scale. NaN when
  // there are no eval rows.
  double true_model_eval_rmse = std::numeric_limits<double>::quiet_NaN();
  double eval_label_stddev = std::numeric_limits<double>::quiet_NaN();
};

// Generates options.rows rows and writes the first ones to `train_path` and
// the last SyntheticEvalRows(options) to `eval_path` (possibly empty), one
// LIBSVM line each: "<label> <index>:<value> ..." with 1-based, strictly
// increasing indices; values are printed exactly (at most 6 significant
// digits), regression labels as %.6g prints them (the summary uses the
// labels as printed).
//
// Each file is written under "<path>.tmp" and renamed into place once both
// are complete and fsync'd, so after a crash or an error a path holds its
// old contents or a whole new file, never part of one (the two renames are
// not one atomic step). Two writers of the same path at once are not
// supported.
//
// Errors: INVALID_ARGUMENT as ValidateSyntheticDataOptions, or for an empty
// path or train_path == eval_path; NOT_FOUND when a file's directory does
// not exist; otherwise a code that follows errno. Messages name the path.
// `summary` may be null; it is filled only on success.
absl::Status WriteSyntheticData(const SyntheticDataOptions& options,
                                const std::string& train_path,
                                const std::string& eval_path,
                                SyntheticDataSummary* summary);

}  // namespace distrt

#endif  // DISTRT_TOOLS_GEN_DATA_SYNTHETIC_DATA_H_
