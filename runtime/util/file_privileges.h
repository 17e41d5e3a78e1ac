#ifndef DISTRT_RUNTIME_UTIL_FILE_PRIVILEGES_H_
#define DISTRT_RUNTIME_UTIL_FILE_PRIVILEGES_H_

// For tests of permission errors (testonly). Root reads and writes files
// whatever their mode, so such a test would pass vacuously or skip where
// tests run as root, as they do in CI. Run the check in a child process
// (gtest's EXPECT_EXIT) that first calls DropFilePrivileges: that process
// is then held to file modes like an unprivileged user, while it can still
// reach the test's directory (which a switch to `nobody` could not, under
// root's home).

#include "absl/status/status.h"

namespace distrt {

// Drops the capabilities that bypass file permissions (CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH, CAP_FOWNER) from this process's effective set. A
// no-op for a process without them. Call it only in a child process: the
// test runner must keep what it has.
absl::Status DropFilePrivileges();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_FILE_PRIVILEGES_H_
