#ifndef DISTRT_TESTS_UTIL_STEP_REQUESTS_H_
#define DISTRT_TESTS_UTIL_STEP_REQUESTS_H_

// A training step's reads, its updates, and both at once, as the
// ParameterServers requests a strategy builds (runtime/ps/ps_requests.h),
// for tests that hand a step's items over by kind. The lists are borrowed
// for the call.

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/ps/parameter_servers.h"

namespace distrt::testing {

// A ReadRequest of `dense` and `sparse`.
inline absl::Status ReadStep(ParameterServers& servers,
                             absl::Span<const DenseVariablePull> dense,
                             absl::Span<const SparseVariablePull> sparse = {}) {
  ReadRequest request;
  request.dense = dense;
  request.sparse = sparse;
  return servers.Read(request);
}

// An UpdateRequest of optimizer gradients and int64 adds.
inline absl::Status UpdateStep(ParameterServers& servers,
                               absl::Span<const DenseVariablePush> dense,
                               absl::Span<const SparseVariablePush> sparse = {},
                               absl::Span<const Int64VariableAdd> adds = {}) {
  UpdateRequest request;
  request.dense = dense;
  request.sparse = sparse;
  request.int64_adds = adds;
  return servers.Update(request);
}

// UpdateStep's request with the reads of ReadStep as its then_read.
inline absl::Status UpdateThenRead(
    ParameterServers& servers, absl::Span<const DenseVariablePush> pushes,
    absl::Span<const SparseVariablePush> row_pushes,
    absl::Span<const Int64VariableAdd> adds,
    absl::Span<const DenseVariablePull> pulls,
    absl::Span<const SparseVariablePull> row_pulls) {
  ReadRequest read;
  read.dense = pulls;
  read.sparse = row_pulls;
  UpdateRequest request;
  request.dense = pushes;
  request.sparse = row_pushes;
  request.int64_adds = adds;
  request.then_read = &read;
  return servers.Update(request);
}

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_STEP_REQUESTS_H_
