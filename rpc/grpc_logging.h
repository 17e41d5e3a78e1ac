#ifndef DISTRT_RPC_GRPC_LOGGING_H_
#define DISTRT_RPC_GRPC_LOGGING_H_

// gRPC prints its own log lines on stderr (a failed bind, a dropped
// connection), each a long internal error tree. Our binaries report those
// conditions themselves, in one line that names the task, so by default
// gRPC's lines are dropped; setting GRPC_VERBOSITY (DEBUG, INFO or ERROR)
// brings them back for debugging.

namespace distrt::rpc {

// Call once at the start of main(), before any gRPC object exists.
void QuietGrpcLoggingUnlessRequested();

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_GRPC_LOGGING_H_
