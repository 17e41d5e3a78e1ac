#ifndef DISTRT_BENCH_PS_MEMORY_BENCH_H_
#define DISTRT_BENCH_PS_MEMORY_BENCH_H_

#include "absl/status/status.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"

namespace distrt::bench {

absl::Status RunPsMemoryBench(const BenchConfig& config, BenchReport* report);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_PS_MEMORY_BENCH_H_
