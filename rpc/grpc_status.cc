#include "rpc/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace distrt::rpc {

absl::Status FromGrpcStatus(const grpc::Status& status,
                            absl::string_view what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace distrt::rpc
