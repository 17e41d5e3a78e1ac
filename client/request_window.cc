#include "client/request_window.h"

#include <algorithm>
#include <cassert>

namespace distrt::ps_client_internal {

RequestWindow::RequestWindow(const std::vector<int>& task_of, int num_tasks,
                             int max_in_flight, int max_per_task)
    : task_of_(task_of),
      max_in_flight_(std::max(1, max_in_flight)),
      max_per_task_(std::max(1, max_per_task)),
      waiting_(num_tasks),
      in_flight_per_task_(num_tasks, 0),
      not_started_(task_of.size()) {
  for (size_t i = 0; i < task_of_.size(); ++i) {
    assert(task_of_[i] >= 0 && task_of_[i] < num_tasks);
    waiting_[task_of_[i]].push_back(i);
  }
}

std::vector<size_t> RequestWindow::Open() {
  absl::MutexLock lock(&mu_);
  std::vector<size_t> start;
  // Bounded: each pass hands out one request or stops.
  while (std::optional<size_t> next = TakeNextLocked()) start.push_back(*next);
  return start;
}

std::optional<size_t> RequestWindow::End(size_t ended) {
  absl::MutexLock lock(&mu_);
  assert(ended < task_of_.size() && in_flight_ > 0);
  --in_flight_;
  --in_flight_per_task_[task_of_[ended]];
  return TakeNextLocked();
}

bool RequestWindow::AllStarted() const {
  absl::MutexLock lock(&mu_);
  return not_started_ == 0;
}

std::optional<size_t> RequestWindow::TakeNextLocked() {
  if (in_flight_ >= max_in_flight_) return std::nullopt;
  // The earliest waiting request whose task is below its cap: a scan over
  // the tasks, a handful.
  int best_task = -1;
  for (size_t task = 0; task < waiting_.size(); ++task) {
    if (waiting_[task].empty() || in_flight_per_task_[task] >= max_per_task_) {
      continue;
    }
    if (best_task < 0 || waiting_[task].front() < waiting_[best_task].front()) {
      best_task = static_cast<int>(task);
    }
  }
  if (best_task < 0) return std::nullopt;
  const size_t next = waiting_[best_task].front();
  waiting_[best_task].pop_front();
  ++in_flight_;
  ++in_flight_per_task_[best_task];
  --not_started_;
  return next;
}

}  // namespace distrt::ps_client_internal
