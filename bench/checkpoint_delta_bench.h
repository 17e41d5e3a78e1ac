#ifndef DISTRT_BENCH_CHECKPOINT_DELTA_BENCH_H_
#define DISTRT_BENCH_CHECKPOINT_DELTA_BENCH_H_

// The checkpoint family of //bench: a delta checkpoint's save against a full
// save's, of a hash table where 1% of the rows changed since (issue 48's
// figure), in one process: SaveShard as a ps task runs it, without RPC.

#include "absl/status/status.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"

namespace distrt::bench {

absl::Status RunCheckpointBench(const BenchConfig& config, BenchReport* report);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_CHECKPOINT_DELTA_BENCH_H_
