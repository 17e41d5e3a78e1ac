#ifndef DISTRT_TESTS_UTIL_LOG_LINES_H_
#define DISTRT_TESTS_UTIL_LOG_LINES_H_

// LogLines: what a component logs through a std::function sink (PsClient's
// and DataPlaneServer's Options::log), kept for a test to look at. The
// sink may be called from several threads at once.

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace distrt::testing {

class LogLines {
 public:
  // Keeps every line it is given; `this` must outlive its calls.
  std::function<void(absl::string_view)> Sink() {
    return [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
  }
  // The lines so far.
  std::vector<std::string> Lines() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }
  // Lines containing `text`.
  int Count(absl::string_view text) {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const std::string& line : lines_) n += absl::StrContains(line, text);
    return n;
  }
  // Every line, for a failure message.
  std::string All() {
    absl::MutexLock lock(&mu_);
    return absl::StrJoin(lines_, "\n");
  }
  // Waits up to `timeout` for at least `n` lines; whether they came.
  bool WaitForLines(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    const auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return lines_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_LOG_LINES_H_
