#include "fuzz/fuzz_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "runtime/util/file_system.h"

namespace distrt::fuzz {
namespace {

constexpr absl::string_view kByteOrderMark = "\xEF\xBB\xBF";

// Where ScratchDir makes its directory.
std::string ScratchBase() {
  if (const char* dir = std::getenv("TEST_TMPDIR"); dir != nullptr && *dir) {
    return dir;
  }
  if (access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  if (const char* dir = std::getenv("TMPDIR"); dir != nullptr && *dir) {
    return dir;
  }
  return "/tmp";
}

// Set once by ScratchDir; never destroyed, so that the exit handler below
// can still read it.
std::string* scratch_dir = nullptr;

void RemoveScratchDir() {
  if (scratch_dir == nullptr) return;
  // At exit nothing can be done about a failure but say so.
  if (absl::Status s = RemoveDirectoryTree(*scratch_dir); !s.ok()) {
    std::fprintf(stderr, "fuzz target: cannot remove %s: %s\n",
                 scratch_dir->c_str(), std::string(s.message()).c_str());
  }
}

}  // namespace

void FuzzFail(absl::string_view message) {
  std::fprintf(stderr, "fuzz target: invariant violated: %.*s\n",
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

void ExpectCode(const absl::Status& status, absl::StatusCode code,
                absl::string_view what) {
  if (status.code() == code) return;
  FuzzFail(absl::StrCat(what, ": expected code ",
                        absl::StatusCodeToString(code), ", got ",
                        status.ToString()));
}

uint8_t ByteReader::Byte() {
  if (position_ == size_) return 0;
  return static_cast<uint8_t>(data_[position_++]);
}

uint16_t ByteReader::U16() {
  const uint16_t low = Byte();
  const uint16_t high = Byte();
  return static_cast<uint16_t>(low | (high << 8));
}

absl::string_view ByteReader::Bytes(size_t n) {
  if (n > remaining()) n = remaining();
  const absl::string_view bytes(data_ + position_, n);
  position_ += n;
  return bytes;
}

absl::string_view ByteReader::Rest() { return Bytes(remaining()); }

std::vector<absl::string_view> SplitLinesLikeLineReader(
    absl::string_view text) {
  std::vector<absl::string_view> lines;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    absl::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == absl::string_view::npos ? text.size()
                                                          : newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (lines.empty()) absl::ConsumePrefix(&line, kByteOrderMark);
    lines.push_back(line);
  }
  return lines;
}

const std::string& ScratchDir() {
  if (scratch_dir != nullptr) return *scratch_dir;
  std::string pattern = JoinPath(ScratchBase(), "distrt_fuzz_XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "fuzz target: cannot create %s: %s\n", pattern.c_str(),
                 std::strerror(errno));
    std::abort();
  }
  scratch_dir = new std::string(std::move(pattern));
  std::atexit(RemoveScratchDir);
  return *scratch_dir;
}

void WriteScratchFile(const std::string& path, absl::string_view bytes) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  absl::Status status =
      fd < 0 ? ErrnoError("cannot create", path) : WriteAll(fd, bytes, path);
  if (fd >= 0 && close(fd) != 0 && status.ok()) {
    status = ErrnoError("cannot close", path);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "fuzz target: %s\n",
                 std::string(status.message()).c_str());
    std::abort();
  }
}

void ResetScratchDirectory(const std::string& path) {
  absl::Status status = RemoveDirectoryTree(path);
  if (status.ok()) status = CreateDirectories(path);
  if (!status.ok()) {
    std::fprintf(stderr, "fuzz target: %s\n",
                 std::string(status.message()).c_str());
    std::abort();
  }
}

}  // namespace distrt::fuzz
