#ifndef DISTRT_FUZZ_FUZZ_UTIL_H_
#define DISTRT_FUZZ_FUZZ_UTIL_H_

// Helpers shared by the fuzz targets in this directory: reading options out
// of the fuzzer's bytes, a scratch directory for code under test that takes
// paths, and reporting a broken invariant.
//
// A fuzz target must return normally for every input: the code under test
// reports bad input as an absl::Status. A target calls FuzzFail only when
// the code broke a promise of its header (a crash in all but name), so that
// libFuzzer records the input as a crash.
//
// Not thread-safe: a fuzz target runs one input at a time.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distrt::fuzz {

// Prints "fuzz target: invariant violated: <message>" and aborts.
[[noreturn]] void FuzzFail(absl::string_view message);

// FuzzFail unless `status` has `code`; `what` names the call.
void ExpectCode(const absl::Status& status, absl::StatusCode code,
                absl::string_view what);

// Consumes the fuzzer's bytes from the front. Reading past the end gives
// zeros (and empty strings), so every input is usable.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data)), size_(size) {}
  explicit ByteReader(absl::string_view bytes)
      : data_(bytes.data()), size_(bytes.size()) {}

  uint8_t Byte();
  // Little-endian.
  uint16_t U16();
  // Up to `n` bytes (fewer at the end).
  absl::string_view Bytes(size_t n);
  // A length-prefixed chunk: a U16 length, then up to that many bytes.
  absl::string_view Chunk() { return Bytes(U16()); }
  // Everything not consumed yet.
  absl::string_view Rest();

  size_t remaining() const { return size_ - position_; }
  bool empty() const { return position_ == size_; }

 private:
  const char* data_;
  size_t size_;
  size_t position_ = 0;
};

// The lines of `text` as runtime/input/line_reader.h reads a file holding
// it: split at '\n', one trailing '\r' removed from each line, a last line
// without '\n' still a line (so a trailing newline adds no empty line), a
// UTF-8 byte order mark at the start dropped.
std::vector<absl::string_view> SplitLinesLikeLineReader(absl::string_view text);

// A directory of this process's own, created on first use and removed
// (with everything in it) at exit: under $TEST_TMPDIR when set (Bazel), else
// /dev/shm when usable (files there cost no disk I/O, fsync included), else
// $TMPDIR or /tmp. Aborts when no directory can be made: without one the
// target cannot run at all.
const std::string& ScratchDir();

// Replaces the file `path` with `bytes` (plain writes, no fsync: scratch
// files only). Aborts on error, as ScratchDir does.
void WriteScratchFile(const std::string& path, absl::string_view bytes);

// Removes `path` with everything in it and creates it again, empty.
void ResetScratchDirectory(const std::string& path);

}  // namespace distrt::fuzz

#endif  // DISTRT_FUZZ_FUZZ_UTIL_H_
