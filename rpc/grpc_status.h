#ifndef DISTRT_RPC_GRPC_STATUS_H_
#define DISTRT_RPC_GRPC_STATUS_H_

// Conversion between grpc::Status and absl::Status at the RPC edge. The codes
// are the same numbers in both; the message gains what was being done.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace distrt::rpc {

// `what` says which call to whom, e.g. "GetStatus to ps task 1 (host:2222)".
absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view what);

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_GRPC_STATUS_H_
