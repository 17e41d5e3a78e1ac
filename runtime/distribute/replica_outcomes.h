#ifndef DISTRT_RUNTIME_DISTRIBUTE_REPLICA_OUTCOMES_H_
#define DISTRT_RUNTIME_DISTRIBUTE_REPLICA_OUTCOMES_H_

// ReplicaOutcomes: what the all-reduces of cross_device_ops share.

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace distrt {

// Each replica's outcome of one all-reduce, for algorithms where one
// replica's failure (a sum on a GPU that ran out of memory) would otherwise
// hand the others a wrong result that they report as fine. Replica r writes
// slot r before the all-reduce's last barrier; every replica reads all
// slots after it. A slot is written again only in the next all-reduce,
// after its first barrier, which every reader reaches after reading.
class ReplicaOutcomes {
 public:
  void Set(int replica, absl::Status status);
  // The first failure among replicas [0, num_replicas), or OK.
  absl::Status First(int num_replicas) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_REPLICA_OUTCOMES_H_
