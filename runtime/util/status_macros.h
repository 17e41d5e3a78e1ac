#ifndef DISTRT_RUNTIME_UTIL_STATUS_MACROS_H_
#define DISTRT_RUNTIME_UTIL_STATUS_MACROS_H_

// Early returns on errors, as TensorFlow and XLA spell them:
//
//   RETURN_IF_ERROR(file.Write(data));
//   ASSIGN_OR_RETURN(Tensor value, variable.ReadCopy(0));
//
// RETURN_IF_ERROR(expr) evaluates the absl::Status `expr` once and returns it
// from the enclosing function unless it is OK. ASSIGN_OR_RETURN(lhs, expr)
// evaluates the absl::StatusOr<T> `expr` once, returns its status unless it
// is OK, and otherwise moves its value into `lhs` (a declaration or an
// existing variable; it must not contain an unparenthesised comma). The
// enclosing function returns absl::Status or any absl::StatusOr.
//
// An early return that changes the status on its way out (naming the ps
// task or the file position it came from) stays written out:
//
//   if (!shard.ok()) return OnTask(t, shard.status());

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RETURN_IF_ERROR(expr)                                         \
  do {                                                                \
    if (::absl::Status distrt_status_ = (expr); !distrt_status_.ok()) \
      return distrt_status_;                                          \
  } while (false)

#define ASSIGN_OR_RETURN(lhs, expr) \
  DISTRT_ASSIGN_OR_RETURN_IMPL(     \
      DISTRT_STATUS_MACROS_CONCAT(distrt_statusor_, __LINE__), lhs, expr)

// Implementation details.
#define DISTRT_STATUS_MACROS_CONCAT_INNER(a, b) a##b
#define DISTRT_STATUS_MACROS_CONCAT(a, b) \
  DISTRT_STATUS_MACROS_CONCAT_INNER(a, b)
#define DISTRT_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr)  \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)

#endif  // DISTRT_RUNTIME_UTIL_STATUS_MACROS_H_
