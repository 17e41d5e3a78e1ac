#include "runtime/util/mutex_checks.h"

#include <cstdlib>
#include <cstring>

#include "absl/synchronization/mutex.h"

namespace distrt {

bool ConfigureMutexDeadlockDetection() {
  const char* keep = std::getenv("DISTRT_MUTEX_DEADLOCK_DETECTION");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) return true;
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return false;
}

}  // namespace distrt
