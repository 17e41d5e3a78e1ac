#include "runtime/util/test_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"

namespace distrt {

TestDir::TestDir() {
  const char* root = getenv("TEST_TMPDIR");
  std::string pattern = JoinPath(
      root != nullptr && root[0] != '\0' ? root : "/tmp", "ckpt_test.XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern << ": " << strerror(errno);
    return;
  }
  path_ = buffer.data();
}

TestDir::~TestDir() {
  if (path_.empty()) return;
  absl::Status status = RemoveDirectoryTree(path_);
  EXPECT_TRUE(status.ok()) << status;
}

std::string TestDir::WriteFile(const std::string& name,
                               absl::string_view contents) const {
  const std::string path = JoinPath(path_, name);
  absl::Status status = WriteFileAtomically(path, {contents});
  EXPECT_TRUE(status.ok()) << status;
  return path;
}

}  // namespace distrt
