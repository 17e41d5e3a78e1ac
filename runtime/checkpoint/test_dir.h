#ifndef DISTRT_RUNTIME_CHECKPOINT_TEST_DIR_H_
#define DISTRT_RUNTIME_CHECKPOINT_TEST_DIR_H_

// TestDir: a fresh, empty directory for one test, under $TEST_TMPDIR (set
// by `bazel test`) or /tmp, removed with everything in it when the TestDir
// is destroyed. Test-only.

#include <string>

namespace distrt {

class TestDir {
 public:
  TestDir();
  ~TestDir();
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  // Empty (and a test failure recorded) when it could not be created.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CHECKPOINT_TEST_DIR_H_
