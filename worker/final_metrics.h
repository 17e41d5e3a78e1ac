#ifndef DISTRT_WORKER_FINAL_METRICS_H_
#define DISTRT_WORKER_FINAL_METRICS_H_

// FinalMetrics: what a finished training job reports, as the end-of-job
// summary lines and as the --metrics_out JSON object:
//
//   {"global_step": 1000, "train_loss": 0.31, "eval_loss": 0.33,
//    "eval_accuracy": 0.87, "eval_auc": 0.93, "eval_rmse": null,
//    "examples_per_sec": 5400.0, "wall_secs": 61.2}
//
// Metrics that do not apply to the model (RMSE of a classifier, accuracy of
// a regression, anything eval without --eval_data) are null. The evaluator
// reports the same object for the checkpoint it evaluated last, with a null
// train_loss and its own examples/s and seconds.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distrt {

struct FinalMetrics {
  int64_t global_step = 0;
  std::optional<double> train_loss;  // null from the evaluator
  std::optional<double> eval_loss;
  std::optional<double> eval_accuracy;
  std::optional<double> eval_auc;
  std::optional<double> eval_rmse;
  double examples_per_sec = 0;
  double wall_secs = 0;
};

std::string FinalMetricsJson(const FinalMetrics& metrics);

// Writes FinalMetricsJson to `path` atomically (a reader never sees half a
// file); errors name the path.
absl::Status WriteFinalMetrics(const std::string& path,
                               const FinalMetrics& metrics);

// Where the evaluator writes its metrics when every task gets the same
// --metrics_out: "out/metrics.json" -> "out/metrics.evaluator.json" (the
// suffix is appended when there is no extension).
std::string EvaluatorMetricsPath(absl::string_view metrics_out);

// The end-of-job summary, one line each, e.g. "eval accuracy 0.8712".
std::vector<std::string> SummaryLines(const FinalMetrics& metrics);

}  // namespace distrt

#endif  // DISTRT_WORKER_FINAL_METRICS_H_
