#include "bench/call_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

// Monotonic: absl::Now() follows the wall clock, which may be stepped while
// a case runs.
using Clock = std::chrono::steady_clock;

}  // namespace

double CallTimes::PerSecond(double units_per_call) const {
  const double seconds = absl::ToDoubleSeconds(total);
  if (calls == 0 || seconds <= 0) return 0;
  return units_per_call * static_cast<double>(calls) / seconds;
}

absl::Duration CallTimes::P50() const { return Percentile(per_call, 0.5); }

absl::Duration Percentile(std::vector<absl::Duration> samples, double q) {
  if (samples.empty()) return absl::ZeroDuration();
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the ceil(q * n)-th smallest, 1-based.
  const size_t n = samples.size();
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::clamp<size_t>(rank, 1, n);
  std::nth_element(samples.begin(), samples.begin() + (rank - 1),
                   samples.end());
  return samples[rank - 1];
}

absl::StatusOr<CallTimes> TimeCalls(
    const TimingOptions& options,
    absl::FunctionRef<absl::Status(int64_t call_index)> call) {
  int64_t index = 0;
  for (int i = 0; i < options.warmup_calls; ++i) {
    RETURN_IF_ERROR(call(index++));
  }
  const int64_t max_calls = std::max(options.max_calls, options.min_calls);
  CallTimes times;
  times.per_call.reserve(max_calls);
  const Clock::time_point start = Clock::now();
  const Clock::time_point stop_after =
      start + absl::ToChronoNanoseconds(options.min_time);
  Clock::time_point end = start;
  // Bounded by max_calls whatever the clock does.
  while (times.calls < max_calls) {
    const Clock::time_point before = Clock::now();
    RETURN_IF_ERROR(call(index++));
    end = Clock::now();
    times.per_call.push_back(absl::FromChrono(end - before));
    ++times.calls;
    if (times.calls >= options.min_calls && end >= stop_after) break;
  }
  times.total = absl::FromChrono(end - start);
  return times;
}

absl::StatusOr<std::vector<CallTimes>> TimeContenders(
    int num_contenders, int rotation, const TimingOptions& options,
    absl::FunctionRef<absl::Status(int contender, int64_t call_index)> call) {
  if (num_contenders < 1) return std::vector<CallTimes>();
  std::vector<CallTimes> times(num_contenders);
  const int first =
      (rotation % num_contenders + num_contenders) % num_contenders;
  for (int k = 0; k < num_contenders; ++k) {
    const int contender = (first + k) % num_contenders;
    absl::StatusOr<CallTimes> t = TimeCalls(options, [&](int64_t call_index) {
      return call(contender, call_index);
    });
    RETURN_IF_ERROR(t.status());
    times[contender] = *std::move(t);
  }
  return times;
}

}  // namespace distrt::bench
