#ifndef DISTRT_RUNTIME_INPUT_TFRECORD_WRITER_H_
#define DISTRT_RUNTIME_INPUT_TFRECORD_WRITER_H_

// TfRecordWriter: writes a TFRecord file (format: tfrecord_reader.h), plain
// or GZIP-compressed, that tf.data.TFRecordDataset reads with the matching
// compression_type. For test data and for data generators that write tens
// of GB: records are framed into a buffer that goes to the file (through
// zlib for GZIP) in large writes, with constant memory.
//
// The file is written in place (O_TRUNC), not atomically: until Close()
// returns OK it is incomplete. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/tfrecord_reader.h"

// zlib's stream state, kept out of this header.
typedef struct z_stream_s z_stream;

namespace distrt {

struct TfRecordWriterOptions {
  TfRecordCompression compression = TfRecordCompression::kNone;
  // zlib's level for GZIP: 0 (stored) to 9 (smallest, slowest); -1 is
  // zlib's default (Z_DEFAULT_COMPRESSION, level 6). 1 writes several
  // times faster for about 10-20% larger files.
  int gzip_level = -1;
  // Bytes framed before each write() (and deflate call); a record at least
  // this large goes out without being copied.
  size_t buffer_size = size_t{256} << 10;
};

class TfRecordWriter {
 public:
  // Creates (or truncates) `path`. Errors: those of open() (code from
  // errno, naming the path); INVALID_ARGUMENT for a gzip_level outside
  // -1..9 or a zero buffer_size.
  static absl::StatusOr<std::unique_ptr<TfRecordWriter>> Open(
      const std::string& path, TfRecordCompression compression);
  static absl::StatusOr<std::unique_ptr<TfRecordWriter>> Open(
      const std::string& path, const TfRecordWriterOptions& options);

  // Closes the file if Close() was not called, dropping any error: call
  // Close() to learn whether the file is complete.
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  // Appends one record (may be empty). The bytes may stay buffered until a
  // later Write or Close. INVALID_ARGUMENT for a record longer than
  // kMaxTfRecordLength (no reader here accepts it); FAILED_PRECONDITION
  // after Close(); a write error (code from errno, naming the path) makes
  // every later call fail with it.
  absl::Status Write(absl::string_view record);

  // Writes what is buffered, ends the gzip stream and closes the file; the
  // first error met by any call, if there was one. Calling it again returns
  // the same.
  absl::Status Close();

  const std::string& path() const { return path_; }
  // Records written so far.
  int64_t records() const { return records_; }
  // Bytes of the uncompressed stream so far (the size of an uncompressed
  // file): the position the next record will have.
  int64_t bytes() const { return bytes_; }

 private:
  TfRecordWriter(std::string path, int fd,
                 const TfRecordWriterOptions& options);

  absl::Status InitDeflate();
  // Appends framed bytes to the buffer, or sends large ones straight on.
  absl::Status Append(absl::string_view data);
  // Sends the buffer's contents on and empties it.
  absl::Status Flush();
  // Writes uncompressed stream bytes to the file (compressing for GZIP).
  absl::Status Sink(absl::string_view data);
  // Runs deflate with `flush` (Z_NO_FLUSH or Z_FINISH) until it has taken
  // all its input (and, for Z_FINISH, ended the stream), writing its output.
  absl::Status Deflate(int flush);

  // Constant after construction.
  const std::string path_;
  const TfRecordWriterOptions options_;

  int fd_;  // -1 once closed
  std::unique_ptr<char[]> buffer_;
  size_t used_ = 0;
  // GZIP only.
  std::unique_ptr<z_stream> zstream_;
  std::unique_ptr<char[]> compressed_;
  size_t compressed_size_ = 0;

  int64_t records_ = 0;
  int64_t bytes_ = 0;
  absl::Status error_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_TFRECORD_WRITER_H_
