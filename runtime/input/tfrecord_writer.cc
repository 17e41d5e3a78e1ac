#include "runtime/input/tfrecord_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The most bytes handed to one deflate call: its counts are 32-bit.
constexpr size_t kMaxDeflateChunk = size_t{1} << 30;

// deflate's output is written in pieces of at least this size, however
// small the framing buffer (tests shrink that).
constexpr size_t kMinCompressedBuffer = size_t{16} << 10;

}  // namespace

absl::StatusOr<std::unique_ptr<TfRecordWriter>> TfRecordWriter::Open(
    const std::string& path, TfRecordCompression compression) {
  TfRecordWriterOptions options;
  options.compression = compression;
  return Open(path, options);
}

absl::StatusOr<std::unique_ptr<TfRecordWriter>> TfRecordWriter::Open(
    const std::string& path, const TfRecordWriterOptions& options) {
  if (options.gzip_level < -1 || options.gzip_level > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": gzip_level ", options.gzip_level,
                     " is not in -1..9"));
  }
  if (options.buffer_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": buffer_size is 0"));
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                      0666);  // less the umask, as any new file
  if (fd < 0) return ErrnoError("cannot create", path);
  std::unique_ptr<TfRecordWriter> writer(new TfRecordWriter(path, fd, options));
  if (options.compression == TfRecordCompression::kGzip) {
    RETURN_IF_ERROR(writer->InitDeflate());
  }
  return writer;
}

TfRecordWriter::TfRecordWriter(std::string path, int fd,
                               const TfRecordWriterOptions& options)
    : path_(std::move(path)),
      options_(options),
      fd_(fd),
      buffer_(new char[options.buffer_size]) {}

TfRecordWriter::~TfRecordWriter() {
  Close().IgnoreError();
  if (zstream_ != nullptr) deflateEnd(zstream_.get());
}

absl::Status TfRecordWriter::InitDeflate() {
  auto stream = std::make_unique<z_stream>();
  std::memset(stream.get(), 0, sizeof(z_stream));
  // 16 + MAX_WBITS: a gzip header and trailer, as TF's
  // ZlibCompressionOptions::GZIP(); memLevel 8 is zlib's default.
  const int result =
      deflateInit2(stream.get(), options_.gzip_level, Z_DEFLATED,
                   16 + MAX_WBITS, /*memLevel=*/8, Z_DEFAULT_STRATEGY);
  if (result != Z_OK) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot write ", path_, ": zlib's deflateInit2 failed (",
                     zError(result), ")"));
  }
  zstream_ = std::move(stream);
  compressed_size_ = std::max(options_.buffer_size, kMinCompressedBuffer);
  compressed_.reset(new char[compressed_size_]);
  return absl::OkStatus();
}

absl::Status TfRecordWriter::Write(absl::string_view record) {
  if (!error_.ok()) return error_;
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write to ", path_, ": the writer is closed"));
  }
  if (record.size() > static_cast<uint64_t>(kMaxTfRecordLength)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write a record of ", record.size(), " bytes to ",
                     path_, ": the limit is ", kMaxTfRecordLength));
  }
  // The framing's encoders (tfrecord_framing.h); 12 and 4 bytes stay in
  // the strings' inline storage.
  std::string header;
  AppendUint64LE(record.size(), &header);
  AppendUint32LE(MaskedCrc32c(header), &header);
  std::string footer;
  AppendUint32LE(MaskedCrc32c(record), &footer);
  absl::Status status = Append(header);
  if (status.ok()) status = Append(record);
  if (status.ok()) status = Append(footer);
  if (!status.ok()) {
    error_ = status;
    return status;
  }
  ++records_;
  bytes_ += kTfRecordHeaderBytes + record.size() + kTfRecordFooterBytes;
  return absl::OkStatus();
}

absl::Status TfRecordWriter::Append(absl::string_view data) {
  if (data.size() > options_.buffer_size - used_) {
    RETURN_IF_ERROR(Flush());
    // Large data goes on without a copy.
    if (data.size() >= options_.buffer_size) return Sink(data);
  }
  std::memcpy(buffer_.get() + used_, data.data(), data.size());
  used_ += data.size();
  return absl::OkStatus();
}

absl::Status TfRecordWriter::Flush() {
  if (used_ == 0) return absl::OkStatus();
  const size_t used = used_;
  used_ = 0;
  return Sink(absl::string_view(buffer_.get(), used));
}

absl::Status TfRecordWriter::Sink(absl::string_view data) {
  if (zstream_ == nullptr) return WriteAll(fd_, data, path_);
  while (!data.empty()) {
    const size_t n = std::min(data.size(), kMaxDeflateChunk);
    // zlib only reads the input; its field just lacks the const.
    zstream_->next_in =
        reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    zstream_->avail_in = static_cast<uInt>(n);
    RETURN_IF_ERROR(Deflate(Z_NO_FLUSH));
    data.remove_prefix(n);
  }
  return absl::OkStatus();
}

absl::Status TfRecordWriter::Deflate(int flush) {
  z_stream* const z = zstream_.get();
  while (true) {
    z->next_out = reinterpret_cast<Bytef*>(compressed_.get());
    z->avail_out = static_cast<uInt>(compressed_size_);
    const int result = deflate(z, flush);
    if (result != Z_OK && result != Z_STREAM_END && result != Z_BUF_ERROR) {
      return absl::InternalError(absl::StrCat("cannot write ", path_,
                                              ": zlib's deflate failed (",
                                              zError(result), ")"));
    }
    const size_t produced = compressed_size_ - z->avail_out;
    RETURN_IF_ERROR(
        WriteAll(fd_, absl::string_view(compressed_.get(), produced), path_));
    if (flush == Z_FINISH ? result == Z_STREAM_END
                          : z->avail_in == 0 && z->avail_out != 0) {
      return absl::OkStatus();
    }
  }
}

absl::Status TfRecordWriter::Close() {
  if (fd_ < 0) return error_;
  absl::Status status = error_;
  if (status.ok()) status = Flush();
  if (status.ok() && zstream_ != nullptr) {
    zstream_->next_in = nullptr;
    zstream_->avail_in = 0;
    status = Deflate(Z_FINISH);
  }
  if (close(fd_) != 0 && status.ok()) {
    status = ErrnoError("cannot close", path_);
  }
  fd_ = -1;
  error_ = status;
  return status;
}

}  // namespace distrt
