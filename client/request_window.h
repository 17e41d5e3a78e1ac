#ifndef DISTRT_CLIENT_REQUEST_WINDOW_H_
#define DISTRT_CLIENT_REQUEST_WINDOW_H_

// RequestWindow: which of one operation's requests PsClient sends next
// (internal to client/). At most `max_in_flight` requests are out at once
// over all ps tasks, and at most `max_per_task` to any one task. The cap per
// task bounds what a task holds at once for one client: a request in flight
// costs a ps task about three times its bytes (gRPC's receive buffers, the
// decoded message, the reply), so a whole-variable push of 32 requests sent
// eight at a time to one task took it 1.7 times the variable's own memory.
// Two at a time already keep a task busy: one is applied while the next
// arrives.
//
// Requests start in the order given, except that one whose task is at its
// cap lets later ones to other tasks go first.

#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace distrt::ps_client_internal {

class RequestWindow {
 public:
  // Request i goes to ps task task_of[i], each in [0, num_tasks). Both caps
  // are at least 1 (smaller values count as 1).
  RequestWindow(const std::vector<int>& task_of, int num_tasks,
                int max_in_flight, int max_per_task);

  // The requests to send now, at the start; each is then in flight.
  std::vector<size_t> Open();

  // Request `ended` is no longer in flight (answered, or failed before or
  // after it was sent): the request to send in its place, if any, which is
  // then in flight. Thread-safe; each request ends once.
  std::optional<size_t> End(size_t ended);

  // Whether every request has been handed out: PsTransport asserts it once
  // a round has ended.
  bool AllStarted() const;

 private:
  std::optional<size_t> TakeNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<int> task_of_;
  const int max_in_flight_;
  const int max_per_task_;
  mutable absl::Mutex mu_;
  // The requests not yet handed out, by task, in order.
  std::vector<std::deque<size_t>> waiting_ ABSL_GUARDED_BY(mu_);
  std::vector<int> in_flight_per_task_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  size_t not_started_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_REQUEST_WINDOW_H_
