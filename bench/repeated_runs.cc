#include "bench/repeated_runs.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace distrt::bench {
namespace {

// What orders a figure's runs: its ratio, or its value where it has no
// baseline.
double Key(const BenchFigure& figure) {
  return figure.baseline_value != 0 ? figure.ratio : figure.value;
}

// Every run of each figure, by name, names in the order first seen.
struct RunsByName {
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, std::vector<const BenchFigure*>> runs;
};

RunsByName GroupByName(const std::vector<std::vector<BenchFigure>>& runs) {
  RunsByName grouped;
  for (const std::vector<BenchFigure>& run : runs) {
    for (const BenchFigure& figure : run) {
      std::vector<const BenchFigure*>& of_name = grouped.runs[figure.name];
      if (of_name.empty()) grouped.names.push_back(figure.name);
      of_name.push_back(&figure);
    }
  }
  for (auto& [name, of_name] : grouped.runs) {
    std::stable_sort(of_name.begin(), of_name.end(),
                     [](const BenchFigure* a, const BenchFigure* b) {
                       return Key(*a) < Key(*b);
                     });
  }
  return grouped;
}

const BenchFigure& Median(const std::vector<const BenchFigure*>& sorted) {
  return *sorted[(sorted.size() - 1) / 2];
}

}  // namespace

std::vector<BenchFigure> MedianFigures(
    const std::vector<std::vector<BenchFigure>>& runs) {
  const RunsByName grouped = GroupByName(runs);
  std::vector<BenchFigure> medians;
  for (const std::string& name : grouped.names) {
    const std::vector<const BenchFigure*>& sorted = grouped.runs.at(name);
    BenchFigure median = Median(sorted);
    median.runs = static_cast<int>(sorted.size());
    median.ratio_min = sorted.front()->ratio;
    median.ratio_max = sorted.back()->ratio;
    medians.push_back(std::move(median));
  }
  return medians;
}

bool FiguresSettled(const std::vector<std::vector<BenchFigure>>& runs,
                    int min_runs) {
  const RunsByName grouped = GroupByName(runs);
  for (const std::string& name : grouped.names) {
    const std::vector<const BenchFigure*>& sorted = grouped.runs.at(name);
    if (static_cast<int>(sorted.size()) < min_runs) return false;
    const double median = Key(Median(sorted));
    size_t near = 0;
    for (const BenchFigure* run : sorted) {
      near += std::abs(Key(*run) - median) <= kSettledWithin * std::abs(median);
    }
    if (2 * near <= sorted.size()) return false;
  }
  return true;
}

}  // namespace distrt::bench
