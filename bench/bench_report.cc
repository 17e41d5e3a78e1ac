#include "bench/bench_report.h"

#include <fstream>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace distrt::bench {

void BenchReport::BeginFamily(absl::string_view title,
                              absl::string_view how_to_read) {
  if (out_ == nullptr) return;
  std::fprintf(out_, "\n== %s\n   %s\n", std::string(title).c_str(),
               std::string(how_to_read).c_str());
  std::fprintf(out_, "   %-40s %14s %-8s %-22s %14s %8s\n", "figure", "value",
               "unit", "baseline", "baseline", "ratio");
  std::fflush(out_);
}

absl::Status BenchReport::CheckNamesUnique() const {
  absl::flat_hash_set<std::string> seen;
  for (const BenchFigure& figure : figures_) {
    if (!seen.insert(figure.name).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("two figures are named \"", figure.name,
                       "\"; every figure needs a name of its own"));
    }
  }
  return absl::OkStatus();
}

void BenchReport::Add(absl::string_view name, double value,
                      absl::string_view unit, absl::string_view baseline,
                      double baseline_value) {
  BenchFigure figure;
  figure.name = std::string(name);
  figure.value = value;
  figure.unit = std::string(unit);
  figure.baseline = std::string(baseline);
  figure.baseline_value = baseline_value;
  figure.ratio = baseline_value != 0 ? value / baseline_value : 0;
  figure.ratio_min = figure.ratio;
  figure.ratio_max = figure.ratio;
  AddFigure(std::move(figure));
}

void BenchReport::AddFigure(BenchFigure figure) {
  if (out_ != nullptr) {
    std::fprintf(out_, "   %-40s %14.4g %-8s %-22s %14.4g %8.3f",
                 figure.name.c_str(), figure.value, figure.unit.c_str(),
                 figure.baseline.c_str(), figure.baseline_value, figure.ratio);
    if (figure.runs > 1) {
      std::fprintf(out_, "  (%d runs: %.3f-%.3f)", figure.runs,
                   figure.ratio_min, figure.ratio_max);
    }
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
  figures_.push_back(std::move(figure));
}

void BenchReport::Note(absl::string_view text) {
  if (out_ == nullptr) return;
  std::fprintf(out_, "   note: %s\n", std::string(text).c_str());
  std::fflush(out_);
}

absl::Status BenchReport::WriteJson(const std::string& path) const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const BenchFigure& figure : figures_) {
    nlohmann::ordered_json entry;
    entry["name"] = figure.name;
    entry["value"] = figure.value;
    entry["unit"] = figure.unit;
    entry["baseline"] = figure.baseline;
    entry["baseline_value"] = figure.baseline_value;
    entry["ratio"] = figure.ratio;
    entry["runs"] = figure.runs;
    entry["ratio_min"] = figure.ratio_min;
    entry["ratio_max"] = figure.ratio_max;
    list.push_back(std::move(entry));
  }
  std::ofstream file(path);
  file << list.dump(2) << "\n";
  file.close();
  if (!file) {
    return absl::InternalError(
        absl::StrCat("--json: cannot write \"", path, "\""));
  }
  return absl::OkStatus();
}

}  // namespace distrt::bench
