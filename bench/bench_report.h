#ifndef DISTRT_BENCH_BENCH_REPORT_H_
#define DISTRT_BENCH_BENCH_REPORT_H_

// BenchReport: the figures one run of //bench measured, each beside the
// baseline measured in the same run, printed as a table and written as JSON
// (a list of {name, value, unit, baseline, baseline_value, ratio, runs,
// ratio_min, ratio_max}).
//
// `ratio` is always value / baseline_value, whatever the unit: above 1 means
// more GB/s, rows/s or examples/s than the baseline, but also more latency,
// seconds or bytes. Each family's heading says which way is better. Not
// thread-safe.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distrt::bench {

struct BenchFigure {
  std::string name;  // e.g. "dense/push/1ps/16MiB"
  double value = 0;
  std::string unit;      // e.g. "GB/s", "us", "rows/s"
  std::string baseline;  // what it is compared with, e.g. "grpc_bytebuffer"
  double baseline_value = 0;
  // value / baseline_value; 0 when the baseline is 0.
  double ratio = 0;
  // How many runs of the family this figure is the median of
  // (bench/repeated_runs.h), and the lowest and highest ratio among them.
  int runs = 1;
  double ratio_min = 0;
  double ratio_max = 0;
};

class BenchReport {
 public:
  // Starts a family's section of the table: its title and a line on how to
  // read its ratios (printed at once, so long runs show progress).
  void BeginFamily(absl::string_view title, absl::string_view how_to_read);
  // Records a figure (computing its ratio) and prints its row.
  void Add(absl::string_view name, double value, absl::string_view unit,
           absl::string_view baseline, double baseline_value);
  // Records a figure made elsewhere (a median of runs) as it is, and prints
  // its row, with the range of its runs' ratios when it has several.
  void AddFigure(BenchFigure figure);
  // A note under the current family (e.g. why a case was skipped).
  void Note(absl::string_view text);

  const std::vector<BenchFigure>& figures() const { return figures_; }

  // FAILED_PRECONDITION naming the first name that two figures share: each
  // figure's name is its key in the JSON and in comparisons across runs.
  absl::Status CheckNamesUnique() const;

  // Writes every figure as a JSON list to `path`; INTERNAL naming the path
  // when it cannot be written.
  absl::Status WriteJson(const std::string& path) const;

  // Rows go to `out` (stdout by default) as they are added; nullptr prints
  // nothing (a repeated run's report, whose medians are printed instead).
  void set_output(std::FILE* out) { out_ = out; }

 private:
  std::vector<BenchFigure> figures_;
  std::FILE* out_ = stdout;
};

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_BENCH_REPORT_H_
