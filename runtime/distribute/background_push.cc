#include "runtime/distribute/background_push.h"

#include <utility>

namespace distrt {

BackgroundPush::~BackgroundPush() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](bool* busy) { return !*busy; }, &busy_));
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status BackgroundPush::WaitLocked() {
  mu_.Await(absl::Condition(
      +[](bool* busy) { return !*busy; }, &busy_));
  return std::exchange(status_, absl::OkStatus());
}

absl::Status BackgroundPush::Start(PushFn push) {
  absl::MutexLock lock(&mu_);
  if (absl::Status before = WaitLocked(); !before.ok()) return before;
  if (!thread_.joinable()) thread_ = std::thread(&BackgroundPush::Serve, this);
  next_ = std::move(push);
  busy_ = true;
  ++started_;
  return absl::OkStatus();
}

absl::Status BackgroundPush::Wait() {
  absl::MutexLock lock(&mu_);
  return WaitLocked();
}

int64_t BackgroundPush::num_started() const {
  absl::MutexLock lock(&mu_);
  return started_;
}

void BackgroundPush::Serve() {
  while (true) {
    PushFn push;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](BackgroundPush* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return self->stop_ || self->next_ != nullptr;
          },
          this));
      if (next_ == nullptr) return;  // stopping, nothing left to push
      push = std::exchange(next_, nullptr);
    }
    absl::Status status = push();
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
    busy_ = false;
  }
}

}  // namespace distrt
