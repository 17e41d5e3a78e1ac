// //bench: every benchmark family of the project in one run, each against a
// baseline measured in the same run (see README "Performance").
//
//   bazel run //bench -- [--quick] [--runs N] [--json FILE] [--only a,b]
//
// --quick runs the quick subset (about 45 s a run here); --runs repeats each
// family (by default --quick repeats it until its figures settle,
// bench/repeated_runs.h) and reports each figure's median run; --json writes
// every figure as a list of {name, value, unit, baseline, baseline_value,
// ratio, runs, ratio_min, ratio_max}; --only runs the named families. A family
// that cannot run (e.g. liblinear-train missing) is reported and the others
// still run; the exit status is 1 when any failed.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/allreduce_bench.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"
#include "bench/checkpoint_delta_bench.h"
#include "bench/dense_transport_bench.h"
#include "bench/end_to_end_bench.h"
#include "bench/input_bench.h"
#include "bench/ps_memory_bench.h"
#include "bench/repeated_runs.h"
#include "bench/sparse_bench.h"
#include "bench/time_to_accuracy_bench.h"
#include "bench/torchscript_bench.h"
#include "runtime/util/malloc_tuning.h"
#include "runtime/util/mutex_checks.h"
#include "runtime/util/status_macros.h"

ABSL_FLAG(bool, quick, false,
          "run the quick subset (1 MiB and 16 MiB dense, one sparse "
          "case, one all-reduce case)");
ABSL_FLAG(int, runs, 0,
          "run each family this many times and report each figure's median "
          "run; 0: with --quick, 3 runs and more (at most 7) until more than "
          "half of each figure's runs lie within 7.5% of its median, "
          "without --quick, one run");
ABSL_FLAG(std::string, json, "",
          "also write every figure to this file as JSON (relative paths are "
          "relative to where `bazel run` was started)");
ABSL_FLAG(std::vector<std::string>, only, {},
          "run only these families (dense, sparse, allreduce, end_to_end, "
          "time_to_accuracy, ps_memory, torchscript, input, checkpoint)");

namespace distrt::bench {
namespace {

struct Family {
  const char* name;
  absl::Status (*run)(const BenchConfig&, BenchReport*);
};

constexpr Family kFamilies[] = {
    {"dense", RunDenseTransportBench},
    {"sparse", RunSparseBench},
    {"allreduce", RunAllReduceBench},
    {"end_to_end", RunEndToEndBench},
    {"time_to_accuracy", RunTimeToAccuracyBench},
    {"ps_memory", RunPsMemoryBench},
    {"torchscript", RunTorchScriptBench},
    {"input", RunInputBench},
    {"checkpoint", RunCheckpointBench},
};

// How many times a family runs: exactly `fixed` when it is set, else from
// `min` until its figures settle or `max` runs.
struct RunCount {
  int min = 1;
  int max = 1;
};

RunCount RunsOfEachFamily(int runs_flag, bool quick) {
  if (runs_flag > 0) return {runs_flag, runs_flag};
  if (quick) return {3, 7};
  return {1, 1};
}

// Runs `family` as `count` says into `report`: the first run prints its rows
// as it goes (progress on long families), later ones print one line each,
// then the figures' medians are printed and recorded.
absl::Status RunFamily(const Family& family, const BenchConfig& config,
                       RunCount count, BenchReport* report) {
  if (count.max == 1) return family.run(config, report);
  std::vector<std::vector<BenchFigure>> runs;
  for (int run = 1; run <= count.max; ++run) {
    BenchReport one;
    if (run > 1) one.set_output(nullptr);
    const absl::Time start = absl::Now();
    RETURN_IF_ERROR(family.run(config, &one));
    runs.push_back(one.figures());
    const bool settled = count.min == count.max
                             ? run == count.max
                             : FiguresSettled(runs, count.min);
    std::printf("   (%s: run %d of at most %d, %.1f s%s)\n", family.name, run,
                count.max, absl::ToDoubleSeconds(absl::Now() - start),
                settled || run < count.min ? "" : "; not settled yet");
    std::fflush(stdout);
    if (settled) break;
  }
  std::vector<BenchFigure> medians = MedianFigures(runs);
  if (medians.empty()) return absl::OkStatus();
  std::printf("   %s: the median run of each figure, of %zu runs\n",
              family.name, runs.size());
  for (BenchFigure& figure : medians) report->AddFigure(std::move(figure));
  return absl::OkStatus();
}

// `bazel run` starts us in the runfiles tree; a relative --json means the
// directory the user typed the command in.
std::string UserPath(const std::string& path) {
  const char* user_dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || user_dir == nullptr) return path;
  return std::string(user_dir) + "/" + path;
}

int Main() {
  std::vector<std::string> only = absl::GetFlag(FLAGS_only);
  for (const std::string& name : only) {
    bool known = false;
    for (const Family& family : kFamilies) known |= name == family.name;
    if (!known) {
      std::vector<std::string> names;
      for (const Family& family : kFamilies) names.push_back(family.name);
      std::fprintf(stderr, "--only: unknown family \"%s\" (families: %s)\n",
                   name.c_str(), absl::StrJoin(names, ", ").c_str());
      return 2;
    }
  }

  BenchConfig config;
  config.quick = absl::GetFlag(FLAGS_quick);
  const int runs_flag = absl::GetFlag(FLAGS_runs);
  if (runs_flag < 0) {
    std::fprintf(stderr, "--runs: %d is not a number of runs (0 or more)\n",
                 runs_flag);
    return 2;
  }
  const RunCount run_count = RunsOfEachFamily(runs_flag, config.quick);
  std::string scratch_template =
      (std::filesystem::temp_directory_path() / "distrt_bench.XXXXXX").string();
  if (mkdtemp(scratch_template.data()) == nullptr) {
    std::perror("bench: cannot create a scratch directory");
    return 1;
  }
  config.scratch_dir = scratch_template;

  std::printf(
      "distrt bench%s: every figure beside a baseline measured in "
      "this run; ratio = value / baseline\n",
      config.quick ? " (--quick)" : "");
  BenchReport report;
  std::vector<std::string> failed;
  for (const Family& family : kFamilies) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), family.name) == only.end()) {
      continue;
    }
    const absl::Time start = absl::Now();
    absl::Status status = RunFamily(family, config, run_count, &report);
    if (!status.ok()) {
      std::printf("   FAILED: %s\n", std::string(status.message()).c_str());
      failed.push_back(family.name);
    }
    std::printf("   (%s: %.1f s)\n", family.name,
                absl::ToDoubleSeconds(absl::Now() - start));
    std::fflush(stdout);
  }
  std::error_code ignored;
  std::filesystem::remove_all(config.scratch_dir, ignored);

  if (absl::Status s = report.CheckNamesUnique(); !s.ok()) {
    std::printf("%s\n", std::string(s.message()).c_str());
    failed.push_back("(figure names)");
  }
  const std::string json = absl::GetFlag(FLAGS_json);
  if (!json.empty()) {
    if (absl::Status s = report.WriteJson(UserPath(json)); !s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::printf("\nwrote %zu figures to %s\n", report.figures().size(),
                UserPath(json).c_str());
  }
  if (!failed.empty()) {
    std::printf("families that failed: %s\n",
                absl::StrJoin(failed, ", ").c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace distrt::bench

int main(int argc, char** argv) {
  distrt::KeepLargeAllocationsInHeap();
  distrt::ConfigureMutexDeadlockDetection();
  absl::ParseCommandLine(argc, argv);
  return distrt::bench::Main();
}
