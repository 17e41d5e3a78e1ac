#include "runtime/input/tfrecord_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/util/crc32c.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Large enough that reading costs few system calls and zlib calls, small
// enough not to matter when a pipeline has many files open at once (a GZIP
// file holds two of these and zlib's 32 KiB window).
constexpr size_t kBufferSize = size_t{128} << 10;

// The most bytes one inflate call is asked for: its counts are 32-bit.
constexpr size_t kMaxInflateChunk = size_t{1} << 30;

// A GZIP record's data is read in pieces that grow with what has arrived,
// so that a damaged length that passes its CRC (or a file cut short) costs
// memory for the data that is really there, not for the length it claims.
constexpr size_t kFirstGzipPiece = size_t{1} << 20;

absl::StatusOr<int64_t> FileSize(int fd, const std::string& path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoError("cannot stat", path);
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

absl::StatusOr<TfRecordCompression> ParseTfRecordCompression(
    absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower.empty() || lower == "none") return TfRecordCompression::kNone;
  if (lower == "gzip") return TfRecordCompression::kGzip;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown TFRecord compression \"", absl::CHexEscape(text),
      "\": expected \"\" or \"none\" (uncompressed), or \"gzip\""));
}

absl::string_view TfRecordCompressionName(TfRecordCompression compression) {
  switch (compression) {
    case TfRecordCompression::kNone:
      return "none";
    case TfRecordCompression::kGzip:
      return "gzip";
  }
  return "unknown";
}

TfRecordCompression TfRecordCompressionForPath(absl::string_view path) {
  if (absl::EndsWithIgnoreCase(path, ".gz") ||
      absl::EndsWithIgnoreCase(path, ".gzip")) {
    return TfRecordCompression::kGzip;
  }
  return TfRecordCompression::kNone;
}

// ---------------------------------------------------------------------------
// TfRecordReader

absl::StatusOr<std::unique_ptr<TfRecordReader>> TfRecordReader::Open(
    const std::string& path, TfRecordCompression compression,
    std::shared_ptr<const RecordParser> parser, const RecordPosition& start) {
  if (start.offset < 0 || start.index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot start reading ", path, " at record ", start.index,
                     ", byte ", start.offset, ": negative position"));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  absl::StatusOr<int64_t> size = FileSize(fd, path);
  if (!size.ok()) {
    close(fd);
    return size.status();
  }
  std::unique_ptr<TfRecordReader> reader(
      new TfRecordReader(path, fd, *size, compression, std::move(parser)));
  if (compression == TfRecordCompression::kGzip) {
    RETURN_IF_ERROR(reader->InitInflate());
  }
  RETURN_IF_ERROR(reader->SeekTo(start));
  return reader;
}

TfRecordReader::TfRecordReader(std::string path, int fd, int64_t file_size,
                               TfRecordCompression compression,
                               std::shared_ptr<const RecordParser> parser)
    : path_(std::move(path)),
      fd_(fd),
      compression_(compression),
      parser_(std::move(parser)),
      file_size_(file_size),
      buffer_(new char[kBufferSize]) {}

TfRecordReader::~TfRecordReader() {
  if (zstream_ != nullptr) inflateEnd(zstream_.get());
  // Nothing was written, so an error of close() loses nothing.
  close(fd_);
}

absl::Status TfRecordReader::InitInflate() {
  auto stream = std::make_unique<z_stream>();
  std::memset(stream.get(), 0, sizeof(z_stream));
  // 16 + MAX_WBITS: a gzip header and trailer around the deflate data, as
  // TF's ZlibCompressionOptions::GZIP() writes them.
  const int result = inflateInit2(stream.get(), 16 + MAX_WBITS);
  if (result != Z_OK) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot read ", path_, ": zlib's inflateInit2 failed (",
                     zError(result), ")"));
  }
  zstream_ = std::move(stream);
  compressed_.reset(new char[kBufferSize]);
  return absl::OkStatus();
}

absl::Status TfRecordReader::SeekTo(const RecordPosition& start) {
  position_ = start;
  position_.line = 0;
  if (start.offset == 0) return absl::OkStatus();
  const auto past_end = [&](int64_t size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot start reading ", path_, " at record ", start.index, ", byte ",
        start.offset, ": the file's ",
        compression_ == TfRecordCompression::kGzip ? "uncompressed stream"
                                                   : "size",
        " is only ", size, " bytes"));
  };
  if (compression_ == TfRecordCompression::kNone) {
    if (start.offset > file_size_) {
      ASSIGN_OR_RETURN(file_size_, FileSize(fd_, path_));
      if (start.offset > file_size_) return past_end(file_size_);
    }
    if (lseek(fd_, start.offset, SEEK_SET) < 0) {
      return ErrnoError("cannot seek in", path_);
    }
    file_offset_ = start.offset;
    stream_offset_ = start.offset;
    return absl::OkStatus();
  }
  // A gzip stream cannot be entered in the middle: inflate up to there.
  ASSIGN_OR_RETURN(const int64_t discarded, Discard(start.offset));
  if (discarded < start.offset) return past_end(discarded);
  return absl::OkStatus();
}

absl::Status TfRecordReader::DataLoss(absl::string_view what) const {
  return absl::DataLossError(
      absl::StrCat(RecordLocation{path_, position_}.ToString(), ": ", what));
}

absl::Status TfRecordReader::Fail(absl::Status status) {
  error_ = status;
  return status;
}

absl::StatusOr<bool> TfRecordReader::Next(std::string* record) {
  if (!error_.ok()) return error_;
  absl::StatusOr<std::optional<int64_t>> length = ReadHeader();
  if (!length.ok()) return Fail(length.status());
  if (!length->has_value()) return false;
  if (absl::Status s = ReadData(**length, record); !s.ok()) return Fail(s);
  position_.offset = stream_offset_;
  ++position_.index;
  return true;
}

absl::StatusOr<bool> TfRecordReader::Skip() {
  if (!error_.ok()) return error_;
  absl::StatusOr<std::optional<int64_t>> length = ReadHeader();
  if (!length.ok()) return Fail(length.status());
  if (!length->has_value()) return false;
  if (absl::Status s = SkipData(**length); !s.ok()) return Fail(s);
  position_.offset = stream_offset_;
  ++position_.index;
  return true;
}

absl::StatusOr<std::optional<int64_t>> TfRecordReader::ReadHeader() {
  char header[kTfRecordHeaderBytes];
  ASSIGN_OR_RETURN(const size_t n, Read(header, sizeof(header)));
  if (n == 0) return std::nullopt;
  if (n < sizeof(header)) {
    return DataLoss(
        absl::StrCat("truncated record header: the file ends after ", n,
                     " of its ", sizeof(header), " bytes"));
  }
  const uint64_t length = DecodeUint64LE(absl::string_view(header, 8));
  const uint32_t stored_crc = DecodeUint32LE(absl::string_view(header + 8, 4));
  const uint32_t crc = MaskedCrc32c(absl::string_view(header, 8));
  if (stored_crc != crc) {
    return DataLoss(absl::StrFormat(
        "corrupt record length: its CRC is 0x%08x, the length's bytes give "
        "0x%08x",
        stored_crc, crc));
  }
  if (length > static_cast<uint64_t>(kMaxTfRecordLength)) {
    return DataLoss(absl::StrCat("record length ", length,
                                 " is larger than the limit of ",
                                 kMaxTfRecordLength, " bytes"));
  }
  const int64_t needed = static_cast<int64_t>(length) + kTfRecordFooterBytes;
  if (compression_ == TfRecordCompression::kNone &&
      needed > file_size_ - stream_offset_) {
    // The file may have grown since it was opened.
    ASSIGN_OR_RETURN(file_size_, FileSize(fd_, path_));
    if (needed > file_size_ - stream_offset_) {
      return DataLoss(
          absl::StrCat("truncated record: its length is ", length, " bytes (+",
                       kTfRecordFooterBytes, " of CRC) but only ",
                       std::max<int64_t>(0, file_size_ - stream_offset_),
                       " bytes are left in the file"));
    }
  }
  return static_cast<int64_t>(length);
}

absl::Status TfRecordReader::ReadData(int64_t length, std::string* record) {
  record->clear();
  const size_t size = static_cast<size_t>(length);
  if (compression_ == TfRecordCompression::kNone) {
    // ReadHeader checked that the file holds this much.
    record->resize(size);
    ASSIGN_OR_RETURN(const size_t n, Read(record->data(), size));
    if (n < size) {
      return DataLoss(absl::StrCat("truncated record: the file ends after ", n,
                                   " of its ", size, " bytes of data"));
    }
  } else {
    while (record->size() < size) {
      const size_t have = record->size();
      const size_t piece =
          std::min(size - have, std::max(have, kFirstGzipPiece));
      record->resize(have + piece);
      ASSIGN_OR_RETURN(const size_t n, Read(record->data() + have, piece));
      if (n < piece) {
        return DataLoss(absl::StrCat("truncated record: the file ends after ",
                                     have + n, " of its ", size,
                                     " bytes of data"));
      }
    }
  }
  char footer[kTfRecordFooterBytes];
  ASSIGN_OR_RETURN(const size_t n, Read(footer, sizeof(footer)));
  if (n < sizeof(footer)) {
    return DataLoss(absl::StrCat(
        "truncated record: the file ends inside the CRC after its ", size,
        " bytes of data"));
  }
  const uint32_t stored_crc = DecodeUint32LE(absl::string_view(footer, 4));
  const uint32_t crc = MaskedCrc32c(*record);
  if (stored_crc != crc) {
    return DataLoss(absl::StrFormat(
        "corrupt record data: its CRC is 0x%08x, its %d bytes give 0x%08x",
        stored_crc, size, crc));
  }
  return absl::OkStatus();
}

absl::Status TfRecordReader::SkipData(int64_t length) {
  const int64_t size = length + kTfRecordFooterBytes;
  ASSIGN_OR_RETURN(const int64_t n, Discard(size));
  if (n < size) {
    return DataLoss(absl::StrCat("truncated record: the file ends after ",
                                 std::min(n, length), " of its ", length,
                                 " bytes of data"));
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> TfRecordReader::Read(char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    if (begin_ < end_) {
      const size_t n = std::min(size - done, end_ - begin_);
      std::memcpy(out + done, buffer_.get() + begin_, n);
      begin_ += n;
      done += n;
      stream_offset_ += n;
      continue;
    }
    if (size - done >= kBufferSize) {
      // Large reads skip the buffer and its copy.
      ASSIGN_OR_RETURN(const size_t n, Produce(out + done, size - done));
      if (n == 0) break;
      done += n;
      stream_offset_ += n;
      continue;
    }
    ASSIGN_OR_RETURN(end_, Produce(buffer_.get(), kBufferSize));
    begin_ = 0;
    if (end_ == 0) break;
  }
  return done;
}

absl::StatusOr<int64_t> TfRecordReader::Discard(int64_t size) {
  int64_t done = 0;
  while (done < size) {
    if (begin_ < end_) {
      const size_t n = static_cast<size_t>(
          std::min<int64_t>(size - done, static_cast<int64_t>(end_ - begin_)));
      begin_ += n;
      done += n;
      stream_offset_ += n;
      continue;
    }
    if (compression_ == TfRecordCompression::kNone &&
        size - done > static_cast<int64_t>(kBufferSize)) {
      // Seek over what the file is known to hold; the rest (if it grew, or
      // to find its end) is read.
      const int64_t n = std::min(
          size - done, std::max<int64_t>(0, file_size_ - file_offset_));
      if (n > 0) {
        if (lseek(fd_, file_offset_ + n, SEEK_SET) < 0) {
          return ErrnoError("cannot seek in", path_);
        }
        file_offset_ += n;
        done += n;
        stream_offset_ += n;
        continue;
      }
    }
    ASSIGN_OR_RETURN(end_, Produce(buffer_.get(), kBufferSize));
    begin_ = 0;
    if (end_ == 0) break;
  }
  return done;
}

absl::StatusOr<size_t> TfRecordReader::Produce(char* out, size_t size) {
  if (compression_ == TfRecordCompression::kGzip) return Inflate(out, size);
  return ReadFile(out, size);
}

absl::StatusOr<size_t> TfRecordReader::ReadFile(char* out, size_t size) {
  while (true) {
    const ssize_t n = read(fd_, out, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path_);
    }
    file_offset_ += n;
    return static_cast<size_t>(n);
  }
}

absl::StatusOr<size_t> TfRecordReader::Inflate(char* out, size_t size) {
  z_stream* const z = zstream_.get();
  size = std::min(size, kMaxInflateChunk);
  z->next_out = reinterpret_cast<Bytef*>(out);
  z->avail_out = static_cast<uInt>(size);
  while (z->avail_out == size) {
    if (z->avail_in == 0 && !file_ended_) {
      ASSIGN_OR_RETURN(const size_t n,
                       ReadFile(compressed_.get(), kBufferSize));
      file_ended_ = n == 0;
      z->next_in = reinterpret_cast<Bytef*>(compressed_.get());
      z->avail_in = static_cast<uInt>(n);
    }
    if (member_ended_) {
      // The file may end between gzip members (or be empty); otherwise
      // another member follows, as `cat a.gz b.gz` makes.
      if (z->avail_in == 0) return size_t{0};
      const int result = inflateReset(z);
      if (result != Z_OK) {
        return DataLoss(absl::StrCat(
            "corrupt gzip stream (inflateReset: ", zError(result), ")"));
      }
      member_ended_ = false;
    }
    if (z->avail_in == 0) {
      return DataLoss(
          "corrupt gzip stream: the file ends inside it (truncated file)");
    }
    const int result = inflate(z, Z_NO_FLUSH);
    if (result == Z_STREAM_END) {
      member_ended_ = true;
    } else if (result != Z_OK) {
      // Z_DATA_ERROR (not gzip, or damaged), Z_MEM_ERROR, Z_NEED_DICT; not
      // Z_BUF_ERROR, which needs an empty input or output and neither is.
      return DataLoss(absl::StrCat("corrupt gzip stream (",
                                   z->msg != nullptr ? z->msg : zError(result),
                                   ")"));
    }
  }
  return size - z->avail_out;
}

// ---------------------------------------------------------------------------
// TfRecordFormat and CountTfRecords

TfRecordFormat::TfRecordFormat(std::optional<TfRecordCompression> compression,
                               std::shared_ptr<const RecordParser> parser)
    : compression_(compression), parser_(std::move(parser)) {}

absl::StatusOr<std::unique_ptr<RecordReader>> TfRecordFormat::Open(
    const std::string& path, const RecordPosition& start) const {
  const TfRecordCompression compression =
      compression_.value_or(TfRecordCompressionForPath(path));
  ASSIGN_OR_RETURN(std::unique_ptr<TfRecordReader> reader,
                   TfRecordReader::Open(path, compression, parser_, start));
  return std::unique_ptr<RecordReader>(std::move(reader));
}

std::string TfRecordFormat::name() const {
  if (!compression_.has_value()) return "tfrecord (gzip by name)";
  if (*compression_ == TfRecordCompression::kGzip) return "tfrecord (gzip)";
  return "tfrecord";
}

absl::StatusOr<int64_t> CountTfRecords(const std::string& path,
                                       TfRecordCompression compression) {
  ASSIGN_OR_RETURN(std::unique_ptr<TfRecordReader> reader,
                   TfRecordReader::Open(path, compression, nullptr));
  while (true) {
    ASSIGN_OR_RETURN(const bool skipped, reader->Skip());
    if (!skipped) return reader->position().index;
  }
}

}  // namespace distrt
