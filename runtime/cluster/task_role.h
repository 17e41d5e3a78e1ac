#ifndef DISTRT_RUNTIME_CLUSTER_TASK_ROLE_H_
#define DISTRT_RUNTIME_CLUSTER_TASK_ROLE_H_

// TaskRole: what a task is within its job, derived from a valid TfConfig the
// way TensorFlow derives it (multi_worker_util.is_chief / worker_count /
// id_in_cluster, TFConfigClusterResolver.master):
//
//   task          is_chief            num_workers           id_in_cluster
//   chief         yes                 chiefs + workers      0
//   worker i      i is the first      chiefs + workers      chiefs + rank of i
//                 worker, no chief
//   evaluator     yes (its own job)   evaluators (1)        its index (0)
//   ps            no                  none                  none
//   local mode    yes                 1                     0
//
// Where TF's answer depends on indices being dense (a sparse worker job from
// Kubeflow, e.g. {"1": ..., "3": ...}), tasks are counted and ranked by the
// indices present: the first present worker is chief when there is no chief,
// and id_in_cluster stays within 0..num_workers-1, as collectives need.

#include <optional>
#include <string>

#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

struct TaskRole {
  bool is_chief = false;
  // Absent where TF has no value for the task (a ps task, or no task).
  std::optional<int> num_workers;
  std::optional<int> id_in_cluster;
  // This task's own "host:port"; empty in local mode, without a task, or for
  // an evaluator outside the cluster.
  std::string address;
  // TFConfigClusterResolver.master(): the address, prefixed "rpc_layer://"
  // when rpc_layer is set; empty when the whole cluster is one task (or none).
  std::string master;
};

TaskRole ResolveTaskRole(const TfConfig& config);

// The cluster's chief and worker tasks, at least 1 (local mode): the job's
// training tasks, one input pipeline each.
int NumTrainingTasks(const ClusterSpec& cluster);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_TASK_ROLE_H_
