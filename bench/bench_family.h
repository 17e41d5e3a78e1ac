#ifndef DISTRT_BENCH_BENCH_FAMILY_H_
#define DISTRT_BENCH_BENCH_FAMILY_H_

// What every benchmark family of //bench receives: the run's settings. Each
// family is a function
//
//   absl::Status RunXxxBench(const BenchConfig& config, BenchReport* report);
//
// that measures its figures and their baselines in the same run, adds them
// to `report`, and returns an error (naming what failed) only when it could
// not measure at all. Families print progress through `report` as they go.

#include <string>

namespace distrt::bench {

struct BenchConfig {
  // The quick subset: fewer sizes and repetitions within a run (bench_main
  // repeats the whole family, bench/repeated_runs.h).
  bool quick = false;
  // Where the project's binaries are (ps_server/ps_server, worker/worker,
  // ...): the runfiles tree, which `bazel run` makes the working directory.
  std::string binaries_dir = ".";
  // A scratch directory for data files and checkpoints, removed afterwards.
  std::string scratch_dir;
};

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_BENCH_FAMILY_H_
