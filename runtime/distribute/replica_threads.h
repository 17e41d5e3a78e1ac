#ifndef DISTRT_RUNTIME_DISTRIBUTE_REPLICA_THREADS_H_
#define DISTRT_RUNTIME_DISTRIBUTE_REPLICA_THREADS_H_

// ReplicaThreads: the threads Strategy::Run runs its replicas on, started
// once and kept for the strategy's lifetime. Starting a thread per replica
// per step cost tens of microseconds a step, and a new thread finds cold
// thread-local state (allocator caches, a GPU's current device) each time.
//
// Replica 0 runs on the calling thread; replica r > 0 always on the same
// thread r, so what a replica leaves in thread-local state (the device made
// current) is still there at its next step.

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace distrt {

class ReplicaThreads {
 public:
  // Starts num_replicas - 1 threads (none for one replica).
  explicit ReplicaThreads(int num_replicas);
  // Stops and joins the threads; no RunEach may be in progress.
  ~ReplicaThreads();
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  int num_replicas() const { return static_cast<int>(threads_.size()) + 1; }

  // Calls fn(r) for every replica r, concurrently, and returns once every
  // call returned, also when replica 0's call throws (the exception is then
  // rethrown). An exception leaving a call on a kept thread terminates the
  // process, as it would on any thread. One RunEach at a time.
  void RunEach(absl::FunctionRef<void(int replica)> fn);

 private:
  void Serve(int replica);
  // Waits until every kept thread finished the round in progress.
  void AwaitRound();

  absl::Mutex mu_;
  // The function of the round in progress, and how many threads have not
  // finished it.
  const absl::FunctionRef<void(int)>* fn_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  int unfinished_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_REPLICA_THREADS_H_
