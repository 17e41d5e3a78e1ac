#ifndef DISTRT_BENCH_CALL_TIMER_H_
#define DISTRT_BENCH_CALL_TIMER_H_

// TimeCalls: how the dense and sparse families time one contender on one
// case: a few untimed warm-up calls, then calls timed one by one until a time
// budget has passed or a call cap is reached (but never fewer than a minimum),
// on the monotonic clock; and TimeContenders, which times several contenders
// on the same case in turn. Throughput comes from the calls' total wall time,
// latency percentiles from the per-call times. Not thread-safe (one caller).

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace distrt::bench {

struct TimingOptions {
  // Untimed calls first (connections, page faults, server-side allocation).
  int warmup_calls = 2;
  // Timed calls stop once this much time has passed since the first ...
  absl::Duration min_time = absl::Seconds(1);
  // ... or after this many calls, whichever comes first ...
  int64_t max_calls = 200;
  // ... but never before this many, so that a slow case still has a median.
  int64_t min_calls = 3;
};

struct CallTimes {
  // Timed calls only, not the warm-up.
  int64_t calls = 0;
  // From the start of the first timed call to the end of the last.
  absl::Duration total = absl::ZeroDuration();
  std::vector<absl::Duration> per_call;

  // `units_per_call` * calls / total seconds (e.g. bytes or rows per second);
  // 0 when nothing was timed.
  double PerSecond(double units_per_call) const;
  // The median per-call time.
  absl::Duration P50() const;
};

// The `q`-quantile (q in [0, 1]) of `samples` by nearest rank: the smallest
// sample at or above a fraction q of them. Zero when `samples` is empty.
absl::Duration Percentile(std::vector<absl::Duration> samples, double q);

// Makes options.warmup_calls calls of `call`, then timed calls as `options`
// says. `call` gets a running index over every call, warm-up included, so
// that it can take a different input each time. Returns the first error of
// any call, with no timings.
absl::StatusOr<CallTimes> TimeCalls(
    const TimingOptions& options,
    absl::FunctionRef<absl::Status(int64_t call_index)> call);

// Times `num_contenders` contenders on one case with TimeCalls, one after
// the other, starting with contender `rotation % num_contenders`: callers
// pass a running case number, so that the contenders take turns at going
// first and slow drift of a busy machine hits them alike. `call(contender,
// call_index)` makes one call. Returns the times indexed by contender, or the
// first error.
absl::StatusOr<std::vector<CallTimes>> TimeContenders(
    int num_contenders, int rotation, const TimingOptions& options,
    absl::FunctionRef<absl::Status(int contender, int64_t call_index)> call);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_CALL_TIMER_H_
