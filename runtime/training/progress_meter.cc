#include "runtime/training/progress_meter.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace distrt {

ProgressMeter::ProgressMeter(int64_t target_steps, absl::Duration interval,
                             absl::Time start)
    : target_steps_(target_steps),
      interval_(interval),
      start_(start),
      last_line_(start) {}

void ProgressMeter::AddStep(int64_t examples, double loss_sum) {
  ++total_steps_;
  total_examples_ += examples;
  window_examples_ += examples;
  window_loss_ += loss_sum;
}

double ProgressMeter::ExamplesPerSecond(absl::Time now) const {
  const double seconds = absl::ToDoubleSeconds(now - start_);
  return seconds > 0 ? total_examples_ / seconds : 0;
}

double ProgressMeter::recent_loss() const {
  if (window_examples_ > 0) return window_loss_ / window_examples_;
  return last_window_examples_ > 0 ? last_window_loss_ / last_window_examples_
                                   : 0;
}

std::optional<std::string> ProgressMeter::Line(int64_t global_step,
                                               absl::Time now) {
  if (first_global_step_ < 0) first_global_step_ = global_step;
  if (now - last_line_ < interval_) return std::nullopt;
  last_line_ = now;
  const double elapsed = absl::ToDoubleSeconds(now - start_);
  std::string line = absl::StrCat("step ", global_step);
  if (target_steps_ > 0) absl::StrAppend(&line, "/", target_steps_);
  absl::StrAppendFormat(&line, ": %.0f examples/s, loss %.4f, elapsed %s",
                        ExamplesPerSecond(now), recent_loss(),
                        FormatSeconds(elapsed));
  // The ETA assumes the global step keeps growing as fast as it did since
  // this worker started (other workers' steps included).
  const int64_t done = global_step - first_global_step_;
  if (target_steps_ > 0 && done > 0 && elapsed > 0) {
    const double rate = done / elapsed;
    absl::StrAppend(&line, ", ETA ",
                    FormatSeconds((target_steps_ - global_step) / rate));
  }
  last_window_loss_ = window_loss_;
  last_window_examples_ = window_examples_;
  window_loss_ = 0;
  window_examples_ = 0;
  return line;
}

std::string FormatSeconds(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

}  // namespace distrt
