#ifndef DISTRT_RUNTIME_UTIL_TEST_DIR_H_
#define DISTRT_RUNTIME_UTIL_TEST_DIR_H_

// TestDir: a fresh, empty directory for one test, under $TEST_TMPDIR (set
// by `bazel test`) or /tmp, removed with everything in it when the TestDir
// is destroyed. Test-only.

#include <string>

#include "absl/strings/string_view.h"

namespace distrt {

class TestDir {
 public:
  TestDir();
  ~TestDir();
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  // Empty (and a test failure recorded) when it could not be created.
  const std::string& path() const { return path_; }

  // Writes `contents` to the file `name` in this directory and returns its
  // path (a test failure is recorded when it cannot).
  std::string WriteFile(const std::string& name,
                        absl::string_view contents) const;

 private:
  std::string path_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_TEST_DIR_H_
