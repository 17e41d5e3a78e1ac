#include "runtime/cluster/rpc_layer.h"

#include "absl/strings/str_cat.h"

namespace distrt {

absl::StatusOr<RpcLayer> ParseRpcLayer(
    const std::optional<std::string>& rpc_layer) {
  if (!rpc_layer.has_value() || rpc_layer->empty() || *rpc_layer == "grpc") {
    return RpcLayer::kGrpc;
  }
  if (*rpc_layer == "grpc+tcp") return RpcLayer::kGrpcTcp;
  return absl::InvalidArgumentError(absl::StrCat(
      "TF_CONFIG \"rpc_layer\": \"", *rpc_layer,
      "\" is not one this runtime speaks: \"grpc\" (the default), or "
      "\"grpc+tcp\" (tensors to the ps tasks over a TCP data plane)"));
}

}  // namespace distrt
