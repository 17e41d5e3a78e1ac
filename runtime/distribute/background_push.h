#ifndef DISTRT_RUNTIME_DISTRIBUTE_BACKGROUND_PUSH_H_
#define DISTRT_RUNTIME_DISTRIBUTE_BACKGROUND_PUSH_H_

// BackgroundPush: a worker's updates to the ps tasks made on a thread of
// their own, one at a time, so that a training step goes on to the next
// while its push travels (StrategyOptions::push_in_background). At most
// one push is in flight: starting one first waits for the one before, so a
// worker is never more than one step ahead of what the ps tasks hold of
// its own updates.
//
// A push's error is returned by the next Start or Wait, whichever comes
// first; once returned it is forgotten.
//
// Thread-safe.

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace distrt {

class BackgroundPush {
 public:
  using PushFn = std::function<absl::Status()>;

  BackgroundPush() = default;
  // Waits for the push in flight (its error, if any, is dropped: call Wait
  // first to see it).
  ~BackgroundPush();
  BackgroundPush(const BackgroundPush&) = delete;
  BackgroundPush& operator=(const BackgroundPush&) = delete;

  // Waits for the push in flight, then starts `push` on the thread (started
  // at the first push, kept until destruction: a thread per step would cost
  // more than some steps). Returns the error of the push waited for, if it
  // failed: `push` is then not started.
  absl::Status Start(PushFn push);

  // Waits for the push in flight, if any; its error, if it failed.
  absl::Status Wait();

  // Pushes started so far.
  int64_t num_started() const;

 private:
  // The thread: runs each push it is given until told to stop.
  void Serve();
  // Waits until no push is in flight, then takes its status.
  absl::Status WaitLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  PushFn next_ ABSL_GUARDED_BY(mu_);        // set while a push waits to start
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // a push given, not done
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);  // the last push's, not taken
  int64_t started_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // started by the first Start
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_BACKGROUND_PUSH_H_
