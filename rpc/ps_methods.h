#ifndef DISTRT_RPC_PS_METHODS_H_
#define DISTRT_RPC_PS_METHODS_H_

// The RPCs of the ParameterServer service (proto/ps_service.proto), numbered
// in the order of the service's definition, which is how the generated
// service numbers them (ps_grpc_server marks its callback methods by these
// numbers). Used for request counts, metrics labels and the request-handler
// fuzzer; ps_methods_test checks them against the service descriptor, so a
// new RPC must be added here too.

#include <array>

namespace distrt::rpc {

enum PsMethod : int {
  kGetStatus,
  kShutdown,
  kCreateVariable,
  kLookupVariable,
  kListVariables,
  kPullDense,
  kPushDense,
  kPullDenseBatch,
  kPushDenseBatch,
  kPullSparse,
  kPushSparse,
  kCreateHashTable,
  kPullHash,
  kPushHash,
  kSave,
  kCommitCheckpoint,
  kRestore,
  kBundle,
  kNumPsMethods,
};

// The methods' names as the service defines them, by PsMethod.
inline constexpr std::array<const char*, kNumPsMethods> kPsMethodNames = {
    "GetStatus",      "Shutdown",   "CreateVariable", "LookupVariable",
    "ListVariables",  "PullDense",  "PushDense",      "PullDenseBatch",
    "PushDenseBatch", "PullSparse", "PushSparse",     "CreateHashTable",
    "PullHash",       "PushHash",   "Save",           "CommitCheckpoint",
    "Restore",        "Bundle"};

// The method's name as the service defines it ("PullDense"), for errors,
// logs and metrics labels: the one place a PsMethod becomes a name.
constexpr const char* PsMethodName(PsMethod method) {
  return kPsMethodNames[method];
}

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_PS_METHODS_H_
