#ifndef DISTRT_BENCH_TABLE_POLICY_BENCH_H_
#define DISTRT_BENCH_TABLE_POLICY_BENCH_H_

// What a hash table's admission and eviction bookkeeping (TablePolicy) costs
// a step, in-process (no RPC): part of the sparse family (RunSparseBench
// calls it), issue 48's "share of a step spent in admission and eviction
// bookkeeping", to be kept under 10%.
//
// The same Zipf stream of batches, each deduplicated as the worker does
// (bench/zipf_ids.h), goes as Pull then Push(..., global_step = step) to
// HashEmbeddingTables of one spec (dim 16, Adagrad, truncated normal):
//
//   bounded    with min_count admission, max_rows and a TTL;
//   unbounded  TablePolicy{}: every id admitted, nothing evicted;
//   same_rows  TablePolicy{}, a copy of `bounded` when timing starts, that
//              then gets each step only the ids `bounded` held a row of
//              (its pulled row is not the unknown row of zeros).
//
// Both bounded and unbounded are warmed up until `bounded` is at its
// max_rows and past its TTL; the steps after are timed, alternating which
// of them goes first. `bounded` against `unbounded` is what the policy
// changes in all: it skips the rows it does not admit, but unbounded holds
// every id ever seen. Against `same_rows`, which does the same row work as
// `bounded` without a policy, it is the bookkeeping alone: the sketch, the
// lookups of ids without a row, the LRU counts, the sweep and evictions,
// and re-creating rows evicted and admitted again. The figures are distinct
// rows per second (each table's time for the same steps), so
//
//   share = (time with policy - time without) / time with policy
//         = 1 - ratio,
//
// under 10% while the ratio is above 0.9. The notes give each table's time
// per step, rows, and what the policy did while timed (admitted, evicted,
// unknown lookups, dropped pushes), so that a reader sees it at work.

#include <cstdint>

#include "absl/status/status.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"

namespace distrt::bench {

absl::Status RunTablePolicyBench(const BenchConfig& config,
                                 BenchReport* report);

// The sizes it runs at; TablePolicyBenchSetup(quick) are //bench's.
struct TablePolicyBenchSetup {
  // The policy table's policy: min_count admission unless 0 (then every
  // id is admitted), max_rows unless 0, ttl_steps unless 0.
  int64_t min_count = 2;
  int64_t sketch_width = int64_t{1} << 22;
  int64_t max_rows = 0;
  int64_t ttl_steps = 0;
  // The warm-up runs until the policy table holds max_rows rows and the
  // step is past ttl_steps, or this many steps.
  int64_t max_warmup_steps = 0;
  int64_t timed_steps = 0;
  // For a profiler (perf record): only the policy table runs, and only its
  // time per step is reported, no figures.
  bool policy_table_only = false;
};
TablePolicyBenchSetup DefaultTablePolicyBenchSetup(bool quick);

// As above, at `setup`'s sizes (bench/table_policy_bench_main.cc's flags).
absl::Status RunTablePolicyBench(const TablePolicyBenchSetup& setup,
                                 BenchReport* report);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_TABLE_POLICY_BENCH_H_
