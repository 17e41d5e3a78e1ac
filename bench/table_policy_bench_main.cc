// The sparse family's policy bookkeeping case alone
// (bench/table_policy_bench.h), without the ps processes the rest of //bench
// starts:
//
//   bazel run //bench:table_policy_bench_main -- [--quick]

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"
#include "bench/table_policy_bench.h"

ABSL_FLAG(bool, quick, false,
          "the quick sizes (max_rows 200k, 20 timed steps) of //bench --quick; "
          "the flags below, when set, replace the sizes");
ABSL_FLAG(int64_t, min_count, -1, "min_count admission; 0: admit every id");
ABSL_FLAG(int64_t, sketch_width, -1, "the admission sketch's width");
ABSL_FLAG(int64_t, max_rows, -1, "eviction.max_rows; 0: unbounded");
ABSL_FLAG(int64_t, ttl_steps, -1, "eviction.ttl_steps; 0: none");
ABSL_FLAG(int64_t, max_warmup_steps, -1, "the warm-up's most steps");
ABSL_FLAG(int64_t, timed_steps, -1, "steps timed");
ABSL_FLAG(bool, policy_table_only, false,
          "for perf record: run the policy table alone, report its time per "
          "step only");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  distrt::bench::TablePolicyBenchSetup setup =
      distrt::bench::DefaultTablePolicyBenchSetup(absl::GetFlag(FLAGS_quick));
  // Each flag set (not -1) replaces its size.
  for (auto [flag, size] : {std::pair{&FLAGS_min_count, &setup.min_count},
                            {&FLAGS_sketch_width, &setup.sketch_width},
                            {&FLAGS_max_rows, &setup.max_rows},
                            {&FLAGS_ttl_steps, &setup.ttl_steps},
                            {&FLAGS_max_warmup_steps, &setup.max_warmup_steps},
                            {&FLAGS_timed_steps, &setup.timed_steps}}) {
    if (absl::GetFlag(*flag) >= 0) *size = absl::GetFlag(*flag);
  }
  setup.policy_table_only = absl::GetFlag(FLAGS_policy_table_only);
  distrt::bench::BenchReport report;
  report.BeginFamily(
      "sparse (policy bookkeeping only): hash table pull + push in-process",
      "rows/s: ratio = with the policy / without; share of the step spent "
      "on bookkeeping = 1 - ratio");
  const absl::Status status =
      distrt::bench::RunTablePolicyBench(setup, &report);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
