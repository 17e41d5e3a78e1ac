#ifndef DISTRT_BENCH_TIME_TO_ACCURACY_BENCH_H_
#define DISTRT_BENCH_TIME_TO_ACCURACY_BENCH_H_

#include "absl/status/status.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"

namespace distrt::bench {

absl::Status RunTimeToAccuracyBench(const BenchConfig& config,
                                    BenchReport* report);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_TIME_TO_ACCURACY_BENCH_H_
