#include "runtime/distribute/replica_threads.h"

namespace distrt {

ReplicaThreads::ReplicaThreads(int num_replicas) {
  for (int r = 1; r < num_replicas; ++r) {
    threads_.emplace_back([this, r] { Serve(r); });
  }
}

ReplicaThreads::~ReplicaThreads() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void ReplicaThreads::Serve(int replica) {
  int64_t done_round = 0;
  while (true) {
    const absl::FunctionRef<void(int)>* fn;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this, done_round]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stopping_ || round_ != done_round;
      };
      mu_.Await(absl::Condition(&has_work));
      if (stopping_) return;
      done_round = round_;
      fn = fn_;
    }
    (*fn)(replica);
    absl::MutexLock lock(&mu_);
    --unfinished_;
  }
}

void ReplicaThreads::AwaitRound() {
  absl::MutexLock lock(&mu_);
  auto all_finished = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return unfinished_ == 0;
  };
  mu_.Await(absl::Condition(&all_finished));
  fn_ = nullptr;
}

void ReplicaThreads::RunEach(absl::FunctionRef<void(int replica)> fn) {
  {
    absl::MutexLock lock(&mu_);
    fn_ = &fn;
    unfinished_ = static_cast<int>(threads_.size());
    ++round_;
  }
  try {
    fn(0);
  } catch (...) {
    // The others still use `fn` and what it refers to: wait for them
    // before the exception unwinds it.
    AwaitRound();
    throw;
  }
  AwaitRound();
}

}  // namespace distrt
