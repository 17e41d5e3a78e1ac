#ifndef DISTRT_RUNTIME_CLUSTER_RPC_LAYER_H_
#define DISTRT_RUNTIME_CLUSTER_RPC_LAYER_H_

// TF_CONFIG's "rpc_layer": how the tasks of a job talk to each other.
//
//   "grpc" (or unset, or "")  every RPC over gRPC
//   "grpc+tcp"                control over gRPC, and the tensor RPCs to the
//                             ps tasks over their TCP data planes
//                             (rpc/data_plane_wire.h), inside the job's
//                             TLS when it has one (rpc/data_plane_tls.h)
//
// Every task of a job reads the same TF_CONFIG "rpc_layer", as TensorFlow's
// "grpc+verbs" / "grpc+gdr" were: the ps tasks open their data planes, the
// workers use them.

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace distrt {

enum class RpcLayer { kGrpc, kGrpcTcp };

// INVALID_ARGUMENT naming the value and the ones this runtime speaks for
// any other (e.g. TensorFlow's "grpc+verbs").
absl::StatusOr<RpcLayer> ParseRpcLayer(
    const std::optional<std::string>& rpc_layer);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_RPC_LAYER_H_
