#ifndef DISTRT_RUNTIME_DISTRIBUTE_REPLICA_GROUP_H_
#define DISTRT_RUNTIME_DISTRIBUTE_REPLICA_GROUP_H_

// ReplicaGroup: what the replicas of one strategy share while Strategy::Run
// runs them on their threads: their devices, the barrier they meet at, and
// one slot per replica for handing values across that barrier (MergeCall
// and the cross-device all-reduces use them).

#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "runtime/collective/cpu_all_reduce.h"
#include "runtime/collective/replica_barrier.h"
#include "runtime/device/device.h"

namespace distrt {

class ReplicaGroup {
 public:
  ReplicaGroup(std::vector<Device*> devices, absl::Duration timeout)
      : devices_(std::move(devices)),
        barrier_(static_cast<int>(devices_.size()), timeout),
        cpu_all_reduce_(&barrier_),
        slots_(devices_.size()) {}
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  int num_replicas() const { return barrier_.num_replicas(); }
  Device* device(int replica) const { return devices_[replica]; }
  ReplicaBarrier& barrier() { return barrier_; }
  // The chunked all-reduce of CPU replicas, meeting at barrier().
  CpuAllReduce& cpu_all_reduce() { return cpu_all_reduce_; }

  // Replica `replica`'s slot: written by that replica before a barrier,
  // read by any replica after it, and not written again before a second
  // barrier (so a reader never sees the next round's value).
  void Put(int replica, std::shared_ptr<void> value) {
    slots_[replica] = std::move(value);
  }
  template <typename T>
  T* Get(int replica) const {
    return static_cast<T*>(slots_[replica].get());
  }

  // The result of a MergeCall, written by replica 0 between barriers.
  std::shared_ptr<void>& merge_result() { return merge_result_; }

 private:
  const std::vector<Device*> devices_;
  ReplicaBarrier barrier_;
  CpuAllReduce cpu_all_reduce_;
  std::vector<std::shared_ptr<void>> slots_;
  std::shared_ptr<void> merge_result_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_REPLICA_GROUP_H_
