#ifndef DISTRT_RUNTIME_EXPORT_NPY_FILE_H_
#define DISTRT_RUNTIME_EXPORT_NPY_FILE_H_

// NpyWriter: one array as a NumPy .npy file (format version 1.0), written
// as a stream of rows, so that a table larger than memory can be written
// from pieces. numpy.load reads it (memory-mapped too), and so does anything
// that reads raw little-endian data after a small text header:
//
//   offset 0   6 bytes   magic "\x93NUMPY"
//   offset 6   2 bytes   version 1, 0
//   offset 8   2 bytes   H: header length, uint16 little-endian
//   offset 10  H bytes   "{'descr': '<f4', 'fortran_order': False,
//                        'shape': (n, d), }" padded with spaces and ended
//                        by '\n' so that the data starts at a multiple of 64
//   offset 10 + H        the elements, row-major (C order), little-endian
//
// The file is written under a temporary name and renamed into place by
// Commit (AtomicFileWriter), which refuses unless exactly the elements the
// shape promises were appended: a reader never finds a short array under
// the final name. Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/util/atomic_file_writer.h"

namespace distrt {

enum class NpyType { kFloat32, kInt64 };

// The header of an array of `type` and `shape` (empty: a scalar), padding
// included. INVALID_ARGUMENT for a negative dimension.
absl::StatusOr<std::string> NpyHeader(NpyType type,
                                      absl::Span<const int64_t> shape);

class NpyWriter {
 public:
  // Creates the temporary beside `path` and writes the header. Errors of
  // NpyHeader and AtomicFileWriter::Create (which name the path).
  static absl::StatusOr<std::unique_ptr<NpyWriter>> Create(
      const std::string& path, NpyType type, std::vector<int64_t> shape);

  const std::string& path() const { return file_->path(); }

  // Appends elements; INTERNAL naming the file when they would exceed the
  // shape's element count.
  absl::Status Append(absl::Span<const float> values);
  absl::Status Append(absl::Span<const int64_t> values);

  // Renames the file into place. FAILED_PRECONDITION naming the file when
  // fewer elements than the shape holds were appended.
  absl::Status Commit();

  // Bytes of the whole file once committed.
  int64_t file_bytes() const;

 private:
  NpyWriter(std::unique_ptr<AtomicFileWriter> file, NpyType type,
            int64_t header_bytes, int64_t elements)
      : file_(std::move(file)),
        type_(type),
        header_bytes_(header_bytes),
        elements_(elements) {}

  absl::Status AppendBytes(NpyType type, const void* data, int64_t count);

  const std::unique_ptr<AtomicFileWriter> file_;
  const NpyType type_;
  const int64_t header_bytes_;
  const int64_t elements_;  // the shape's element count
  int64_t appended_ = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_EXPORT_NPY_FILE_H_
