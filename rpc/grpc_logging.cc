#include "rpc/grpc_logging.h"

#include <cstdlib>

#include "grpc/support/log.h"

namespace distrt::rpc {
namespace {

void DiscardGrpcLog(gpr_log_func_args*) {}

}  // namespace

void QuietGrpcLoggingUnlessRequested() {
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function(DiscardGrpcLog);
  }
}

}  // namespace distrt::rpc
