#ifndef DISTRT_RUNTIME_TRAINING_PROGRESS_METER_H_
#define DISTRT_RUNTIME_TRAINING_PROGRESS_METER_H_

// ProgressMeter: the worker's "every few seconds, one line" progress
// output. It accumulates steps, examples and loss since the last line and,
// once the interval has passed, formats
//
//   step 120/1000: 5400 examples/s, loss 0.4123, elapsed 12s, ETA 1m30s
//
// Time is passed in, so tests need no clock.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace distrt {

class ProgressMeter {
 public:
  // `target_steps`: the global step training stops at, 0 when unknown (then
  // no ETA). `start`: when training started.
  ProgressMeter(int64_t target_steps, absl::Duration interval,
                absl::Time start);

  // One step of this worker: `examples` with `loss_sum` over them.
  void AddStep(int64_t examples, double loss_sum);

  // The line to print when `interval` passed since the last one, given the
  // global step now.
  std::optional<std::string> Line(int64_t global_step, absl::Time now);

  // Over all steps so far.
  int64_t total_examples() const { return total_examples_; }
  int64_t total_steps() const { return total_steps_; }
  double ExamplesPerSecond(absl::Time now) const;
  // The mean loss of the steps since the last line (of all steps before the
  // first line), the "current" training loss.
  double recent_loss() const;

 private:
  const int64_t target_steps_;
  const absl::Duration interval_;
  const absl::Time start_;
  absl::Time last_line_;
  int64_t first_global_step_ = -1;
  int64_t total_examples_ = 0;
  int64_t total_steps_ = 0;
  int64_t window_examples_ = 0;
  double window_loss_ = 0;
  double last_window_loss_ = 0;
  int64_t last_window_examples_ = 0;
};

// "12s", "1m30s", "2h05m".
std::string FormatSeconds(double seconds);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_PROGRESS_METER_H_
