#ifndef DISTRT_CLIENT_RESOLVE_COMMAND_H_
#define DISTRT_CLIENT_RESOLVE_COMMAND_H_

// `distctl resolve`: what a process started with this TF_CONFIG will see.

#include "runtime/cluster/json_util.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

// One JSON object with the keys, in this order: mode ("local" or
// "distributed"), cluster (as given: lists stay lists, sparse jobs stay
// objects keyed by index), task_type, task_index, rpc_layer, environment,
// master, is_chief, num_workers, id_in_cluster. A value that does not exist
// for the task (num_workers of a ps task, say) is null.
Json DescribeResolvedConfig(const TfConfig& config);

}  // namespace distrt

#endif  // DISTRT_CLIENT_RESOLVE_COMMAND_H_
