#include "worker/final_metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"

namespace distrt {
namespace {

nlohmann::json OrNull(const std::optional<double>& value) {
  return value.has_value() ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

std::string FinalMetricsJson(const FinalMetrics& m) {
  // ordered_json keeps the documented key order for people reading it.
  nlohmann::ordered_json json;
  json["global_step"] = m.global_step;
  json["train_loss"] = OrNull(m.train_loss);
  json["eval_loss"] = OrNull(m.eval_loss);
  json["eval_accuracy"] = OrNull(m.eval_accuracy);
  json["eval_auc"] = OrNull(m.eval_auc);
  json["eval_rmse"] = OrNull(m.eval_rmse);
  json["examples_per_sec"] = m.examples_per_sec;
  json["wall_secs"] = m.wall_secs;
  return json.dump(2) + "\n";
}

absl::Status WriteFinalMetrics(const std::string& path,
                               const FinalMetrics& metrics) {
  const std::string json = FinalMetricsJson(metrics);
  const absl::string_view pieces[] = {json};
  return WriteFileAtomically(path, pieces);
}

std::string EvaluatorMetricsPath(absl::string_view metrics_out) {
  const size_t slash = metrics_out.rfind('/');
  const size_t dot = metrics_out.rfind('.');
  const bool has_extension =
      dot != absl::string_view::npos &&
      (slash == absl::string_view::npos || dot > slash + 1);
  if (!has_extension) return absl::StrCat(metrics_out, ".evaluator");
  return absl::StrCat(metrics_out.substr(0, dot), ".evaluator",
                      metrics_out.substr(dot));
}

std::vector<std::string> SummaryLines(const FinalMetrics& m) {
  std::vector<std::string> lines;
  if (m.train_loss.has_value()) {
    lines.push_back(absl::StrFormat(
        "trained to global step %d in %.1fs, %.0f examples/s, final train "
        "loss %.4f",
        m.global_step, m.wall_secs, m.examples_per_sec, *m.train_loss));
  } else {
    lines.push_back(absl::StrFormat(
        "evaluated the checkpoint of global step %d in %.1fs, %.0f "
        "examples/s",
        m.global_step, m.wall_secs, m.examples_per_sec));
  }
  std::string eval;
  if (m.eval_loss) eval += absl::StrFormat(" loss %.4f", *m.eval_loss);
  if (m.eval_accuracy) {
    eval += absl::StrFormat(" accuracy %.4f", *m.eval_accuracy);
  }
  if (m.eval_auc) eval += absl::StrFormat(" auc %.4f", *m.eval_auc);
  if (m.eval_rmse) eval += absl::StrFormat(" rmse %.4f", *m.eval_rmse);
  if (!eval.empty()) lines.push_back("eval:" + eval);
  return lines;
}

}  // namespace distrt
