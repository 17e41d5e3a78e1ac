#ifndef DISTRT_RUNTIME_INPUT_TFRECORD_READER_H_
#define DISTRT_RUNTIME_INPUT_TFRECORD_READER_H_

// TFRecord files, TensorFlow's container for training data (usually one
// serialized tf.Example per record), read as a stream of records.
//
// The format, from TensorFlow's documentation (tf.io.TFRecordWriter,
// tensorflow/core/lib/io/record_writer.h): a file is a sequence of records,
//
//   uint64 length                      little endian
//   uint32 masked_crc32c(length)       of the 8 bytes above
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// where masked_crc32c(x) = rotate_right(crc32c(x), 15) + 0xa282ead8 (uint32
// arithmetic), so that a CRC of data that holds CRCs stays well spread. A
// GZIP-compressed file (TFRecordOptions("GZIP")) is the same stream run
// through gzip; concatenated gzip members, as `cat a.gz b.gz` or parallel
// gzip tools make, read as one stream.
//
// Positions (record_reader.h) count in that uncompressed stream: a record's
// offset is the byte offset of its length field, its index its 0-based
// number in the file; line is always 0.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/record_reader.h"
#include "runtime/util/tfrecord_framing.h"

// zlib's stream state, kept out of this header.
typedef struct z_stream_s z_stream;

namespace distrt {

// How a TFRecord file's bytes are compressed, as TF's compression_type.
enum class TfRecordCompression { kNone, kGzip };

// "", "none" -> kNone and "gzip" -> kGzip, in any case (TF's names).
// INVALID_ARGUMENT naming the text and the accepted names otherwise.
absl::StatusOr<TfRecordCompression> ParseTfRecordCompression(
    absl::string_view text);

// "none" or "gzip".
absl::string_view TfRecordCompressionName(TfRecordCompression compression);

// The compression a file's name suggests: kGzip for a ".gz" or ".gzip"
// suffix (any case), kNone otherwise. For a compression option of "auto".
TfRecordCompression TfRecordCompressionForPath(absl::string_view path);

// The largest record length accepted. A larger one is DATA_LOSS: no
// tf.Example can be that large (protobuf stops at 2 GiB), so the length is
// damaged, and reading it must not allocate that much.
inline constexpr int64_t kMaxTfRecordLength = (int64_t{1} << 31) - 1;

// Reads one TFRecord file from start to end with constant memory: a read
// buffer (and zlib's state for GZIP), never the whole file; a record is
// held only while it is returned. Every record's length and data CRCs are
// checked.
//
// Errors: a damaged file (a CRC mismatch, a file that ends inside a record,
// a corrupt gzip stream, a length too large to be real) is DATA_LOSS
// "<path>: record <index> at byte <offset>: <what>"; a read error has the
// code errno maps to and names the path. Bytes after a GZIP file's last
// member that do not start another member are a corrupt gzip stream. After
// an error the reader is unusable: every later call returns the same error,
// and position() still names the damaged record.
//
// Not thread-safe. The file is closed by the destructor.
class TfRecordReader : public RecordReader {
 public:
  // Opens `path` to read its records from `start`, a position a reader of
  // the same file reported ({} is the start of the file). An uncompressed
  // file seeks there; a GZIP file cannot seek, so it is decompressed from
  // its beginning and the bytes before `start` are thrown away: resuming
  // near the end of a large GZIP file costs about as much as reading it.
  // `parser` is returned by parser() for the records of this file.
  //
  // Errors: those of open() (code from errno, naming the path);
  // INVALID_ARGUMENT for a negative position or one beyond the end of the
  // file.
  static absl::StatusOr<std::unique_ptr<TfRecordReader>> Open(
      const std::string& path, TfRecordCompression compression,
      std::shared_ptr<const RecordParser> parser,
      const RecordPosition& start = {});

  ~TfRecordReader() override;
  TfRecordReader(const TfRecordReader&) = delete;
  TfRecordReader& operator=(const TfRecordReader&) = delete;

  // Stores the next record's data in `*record` (reusing its capacity) and
  // returns true, or false at the end of the file.
  absl::StatusOr<bool> Next(std::string* record) override;

  // Moves past the next record without returning it, and returns false at
  // the end of the file. Only the length's CRC is checked; an uncompressed
  // file seeks over the data when it is not already buffered.
  absl::StatusOr<bool> Skip();

  RecordPosition position() const override { return position_; }
  const std::string& path() const override { return path_; }
  std::shared_ptr<const RecordParser> parser() const override {
    return parser_;
  }
  TfRecordCompression compression() const { return compression_; }

 private:
  TfRecordReader(std::string path, int fd, int64_t file_size,
                 TfRecordCompression compression,
                 std::shared_ptr<const RecordParser> parser);

  // Sets up zlib for a GZIP file.
  absl::Status InitInflate();
  // Moves to `start` (see Open).
  absl::Status SeekTo(const RecordPosition& start);

  // Reads the next record's header: false at a clean end of the file,
  // otherwise the record's data length (CRC and limits checked).
  absl::StatusOr<std::optional<int64_t>> ReadHeader();
  // Reads `length` data bytes and the footer into `*record`, checking the
  // CRC.
  absl::Status ReadData(int64_t length, std::string* record);
  // Moves past `length` data bytes and the footer without reading them.
  absl::Status SkipData(int64_t length);

  // Copies up to `size` bytes of the uncompressed stream to `out`, short
  // only at the end of the stream; returns how many.
  absl::StatusOr<size_t> Read(char* out, size_t size);
  // Discards up to `size` bytes of the uncompressed stream; returns how
  // many (fewer only at its end).
  absl::StatusOr<int64_t> Discard(int64_t size);
  // Produces the next bytes of the uncompressed stream into `out` (at most
  // `size`, at least 1 unless the stream has ended): read() for an
  // uncompressed file, inflate for a GZIP one.
  absl::StatusOr<size_t> Produce(char* out, size_t size);
  absl::StatusOr<size_t> Inflate(char* out, size_t size);
  // Reads raw file bytes: into `out`, or for GZIP into compressed_.
  absl::StatusOr<size_t> ReadFile(char* out, size_t size);

  // DATA_LOSS "<path>: record <index> at byte <offset>: <what>" for the
  // record being read.
  absl::Status DataLoss(absl::string_view what) const;
  // Records `status` as the reader's permanent error and returns it.
  absl::Status Fail(absl::Status status);

  // Constant after construction.
  const std::string path_;
  const int fd_;
  const TfRecordCompression compression_;
  const std::shared_ptr<const RecordParser> parser_;

  // The file's size: when opened, refreshed when a record seems to run
  // past it (the file may be growing).
  int64_t file_size_;
  // Bytes of the file read or seeked over so far.
  int64_t file_offset_ = 0;

  // Uncompressed stream bytes not yet consumed: buffer_[begin_, end_).
  std::unique_ptr<char[]> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  // Bytes of the uncompressed stream consumed so far.
  int64_t stream_offset_ = 0;

  // GZIP only: zlib's state, compressed bytes read from the file and not
  // yet inflated (zlib points into compressed_), and whether the last gzip
  // member ended (another may follow, or the file may end cleanly).
  std::unique_ptr<z_stream> zstream_;
  std::unique_ptr<char[]> compressed_;
  bool member_ended_ = true;
  bool file_ended_ = false;

  // The next record to be returned.
  RecordPosition position_;
  absl::Status error_;
};

// Reads TFRecord files with one compression (or each file's, guessed from
// its name) and one parser for all their records. Thread-safe.
class TfRecordFormat : public RecordFormat {
 public:
  // `compression` std::nullopt: each file's from its name
  // (TfRecordCompressionForPath), for a compression option of "auto".
  TfRecordFormat(std::optional<TfRecordCompression> compression,
                 std::shared_ptr<const RecordParser> parser);

  absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordPosition& start) const override;

  // "tfrecord", "tfrecord (gzip)", or "tfrecord (gzip by name)" when the
  // compression is guessed from each file's name.
  std::string name() const override;

  const std::optional<TfRecordCompression>& compression() const {
    return compression_;
  }

 private:
  const std::optional<TfRecordCompression> compression_;
  const std::shared_ptr<const RecordParser> parser_;
};

// The number of records in the TFRecord file `path`, with the reader's
// errors. An uncompressed file's headers are read and its data seeked over
// (only length CRCs are checked); a GZIP file is decompressed.
absl::StatusOr<int64_t> CountTfRecords(const std::string& path,
                                       TfRecordCompression compression);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_TFRECORD_READER_H_
