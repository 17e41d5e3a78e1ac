#ifndef DISTRT_RUNTIME_CHECKPOINT_SHARD_FILE_H_
#define DISTRT_RUNTIME_CHECKPOINT_SHARD_FILE_H_

// A checkpoint shard file: what one parameter server saved. The byte layout
// (docs/checkpoint_format.md has the full description):
//
//   offset 0        8 bytes   magic "DTCKPT01"
//   offset 8        4 bytes   H: header length, uint32 little-endian
//   offset 12       4 bytes   CRC32C of the H header bytes, uint32 LE
//   offset 16       H bytes   serialized distrt.ps.CheckpointShardHeader
//   offset 16 + H   ...       data section: tensors as raw little-endian
//                             bytes, each where its SavedTensor says
//                             (offset from the data section's start) with
//                             its own CRC32C
//
// Writing builds the whole header first (offsets and checksums included),
// then writes the file atomically (WriteFileAtomically), so a crash never
// leaves a torn shard under the final name. Reading trusts nothing: every
// length is checked against the file's size before anything is allocated,
// and every error is DATA_LOSS (or the file system's code) naming the file
// and, for a tensor, which tensor.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/checkpoint.pb.h"
#include "runtime/util/file_system.h"

namespace distrt {

inline constexpr absl::string_view kShardFileMagic = "DTCKPT01";
// Magic, header length and header CRC.
inline constexpr int64_t kShardPreambleBytes = 16;
// A header larger than this is refused as corrupt before it is read (it
// would describe millions of variables).
inline constexpr int64_t kMaxShardHeaderBytes = int64_t{1} << 30;

// The data section of a shard being written: tensors laid out one after
// another, in the order added. Not thread-safe.
class ShardDataSection {
 public:
  // Appends `bytes` as the next tensor and records its dtype, offset, length
  // and CRC32C in `*entry` (typically a field of the header being built).
  // Both are borrowed: `bytes` must stay valid until WriteShardFile returns.
  void Add(ps::DataType dtype, absl::string_view bytes, ps::SavedTensor* entry);

  int64_t size() const { return size_; }
  const std::vector<absl::string_view>& pieces() const { return pieces_; }

 private:
  std::vector<absl::string_view> pieces_;
  int64_t size_ = 0;
};

// Writes the shard file `path` (atomically, see above) from `header`, whose
// SavedTensors were filled by data.Add, and returns the file's size in
// bytes. INVALID_ARGUMENT when the header exceeds kMaxShardHeaderBytes.
absl::StatusOr<int64_t> WriteShardFile(const std::string& path,
                                       const ps::CheckpointShardHeader& header,
                                       const ShardDataSection& data);

// An open shard file with its verified header. Thread-safe (reads are
// positionless); the file stays open until the reader is destroyed.
class ShardFileReader {
 public:
  // Opens `path` and checks, in this order: the magic, that the header
  // length fits in the file, the header's CRC32C, and that it parses.
  // DATA_LOSS naming the file for each; the file system's errors otherwise
  // (NOT_FOUND when there is no such file).
  static absl::StatusOr<std::unique_ptr<ShardFileReader>> Open(
      const std::string& path);

  const std::string& path() const { return file_->path(); }
  const ps::CheckpointShardHeader& header() const { return header_; }
  // The size of the data section, which every tensor must lie within.
  int64_t data_bytes() const { return data_bytes_; }

  // The `elements` elements of `tensor`, which should be a float32 (or
  // int64) tensor. Before allocating, checks the dtype, that the length is
  // `elements` elements and that the bytes lie within the data section;
  // after reading, the CRC32C. `what` names the tensor in errors, e.g.
  // `variable "w" slot "m"`; errors are DATA_LOSS naming the file and it.
  absl::StatusOr<std::vector<float>> ReadFloat32(const ps::SavedTensor& tensor,
                                                 int64_t elements,
                                                 absl::string_view what) const;
  absl::StatusOr<std::vector<int64_t>> ReadInt64(const ps::SavedTensor& tensor,
                                                 int64_t elements,
                                                 absl::string_view what) const;

 private:
  ShardFileReader(std::unique_ptr<ReadOnlyFile> file,
                  ps::CheckpointShardHeader header, int64_t data_start)
      : file_(std::move(file)),
        header_(std::move(header)),
        data_start_(data_start),
        data_bytes_(file_->size() - data_start) {}

  // Checks `tensor` against `dtype` and `elements` (see ReadFloat32), then
  // reads it and verifies its CRC32C. T is float or int64_t.
  template <typename T>
  absl::StatusOr<std::vector<T>> ReadTensor(const ps::SavedTensor& tensor,
                                            ps::DataType dtype,
                                            int64_t elements,
                                            absl::string_view what) const;

  const std::unique_ptr<ReadOnlyFile> file_;
  const ps::CheckpointShardHeader header_;
  const int64_t data_start_;
  const int64_t data_bytes_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CHECKPOINT_SHARD_FILE_H_
