#include "runtime/checkpoint/shard_file.h"

#include <string>
#include <utility>

#include "absl/base/config.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/crc32c.h"
#include "runtime/util/status_macros.h"

// Tensors are written and read as the machine's bytes, which the format
// defines as little-endian.
#ifndef ABSL_IS_LITTLE_ENDIAN
#error "checkpoint shard files assume a little-endian machine"
#endif

namespace distrt {
namespace {

void PutUint32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint32_t GetUint32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

std::string Hex32(uint32_t v) {
  return absl::StrCat("0x", absl::Hex(v, absl::kZeroPad8));
}

}  // namespace

void ShardDataSection::Add(ps::DataType dtype, absl::string_view bytes,
                           ps::SavedTensor* entry) {
  entry->set_dtype(dtype);
  entry->set_offset(size_);
  entry->set_length(bytes.size());
  entry->set_crc32c(Crc32c(bytes));
  pieces_.push_back(bytes);
  size_ += bytes.size();
}

absl::StatusOr<int64_t> WriteShardFile(const std::string& path,
                                       const ps::CheckpointShardHeader& header,
                                       const ShardDataSection& data) {
  const size_t header_bytes = header.ByteSizeLong();
  if (header_bytes > static_cast<size_t>(kMaxShardHeaderBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot write ", path, ": the header would have ", header_bytes,
        " bytes, more than the format's limit of ", kMaxShardHeaderBytes));
  }
  std::string serialized;
  if (!header.SerializeToString(&serialized)) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": the header does not serialize"));
  }
  char preamble[kShardPreambleBytes];
  kShardFileMagic.copy(preamble, kShardFileMagic.size());
  PutUint32(static_cast<uint32_t>(serialized.size()), preamble + 8);
  PutUint32(Crc32c(serialized), preamble + 12);

  std::vector<absl::string_view> pieces = {
      absl::string_view(preamble, sizeof(preamble)), serialized};
  pieces.insert(pieces.end(), data.pieces().begin(), data.pieces().end());
  RETURN_IF_ERROR(WriteFileAtomically(path, pieces));
  return kShardPreambleBytes + static_cast<int64_t>(serialized.size()) +
         data.size();
}

absl::StatusOr<std::unique_ptr<ShardFileReader>> ShardFileReader::Open(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadOnlyFile> file,
                   ReadOnlyFile::Open(path));
  const int64_t size = file->size();
  if (size < kShardPreambleBytes) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a checkpoint shard: it has ", size,
                     " bytes, fewer than the ", kShardPreambleBytes,
                     "-byte preamble (truncated?)"));
  }
  char preamble[kShardPreambleBytes];
  RETURN_IF_ERROR(file->ReadAt(0, absl::MakeSpan(preamble)));
  const absl::string_view magic(preamble, kShardFileMagic.size());
  if (magic != kShardFileMagic) {
    return absl::DataLossError(absl::StrCat(
        path, " is not a checkpoint shard: it starts with \"",
        absl::CHexEscape(magic), "\", not \"", kShardFileMagic, "\""));
  }
  const int64_t header_bytes = GetUint32(preamble + 8);
  const uint32_t header_crc = GetUint32(preamble + 12);
  if (header_bytes > kMaxShardHeaderBytes ||
      header_bytes > size - kShardPreambleBytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": the header length ", header_bytes,
                     " exceeds the ", size - kShardPreambleBytes,
                     " bytes after the preamble (truncated or corrupt)"));
  }
  std::string serialized(header_bytes, '\0');
  RETURN_IF_ERROR(
      file->ReadAt(kShardPreambleBytes, absl::MakeSpan(serialized)));
  if (const uint32_t crc = Crc32c(serialized); crc != header_crc) {
    return absl::DataLossError(
        absl::StrCat(path, ": the header is corrupt: its CRC32C is ",
                     Hex32(crc), ", the preamble says ", Hex32(header_crc)));
  }
  ps::CheckpointShardHeader header;
  if (!header.ParseFromString(serialized)) {
    return absl::DataLossError(absl::StrCat(
        path, ": the header does not parse as a CheckpointShardHeader"));
  }
  return std::unique_ptr<ShardFileReader>(new ShardFileReader(
      std::move(file), std::move(header), kShardPreambleBytes + header_bytes));
}

template <typename T>
absl::StatusOr<std::vector<T>> ShardFileReader::ReadTensor(
    const ps::SavedTensor& tensor, ps::DataType dtype, int64_t elements,
    absl::string_view what) const {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  auto corrupt = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(path(), ": ", what, " ", why));
  };
  const absl::string_view type_name = ps::DataType_Name(dtype);
  // Every check comes before the allocation: the sizes come from the file.
  if (elements < 0 || elements > data_bytes_ / int64_t{sizeof(T)}) {
    return corrupt(absl::StrCat("would have ", elements, " ", type_name,
                                " elements, more than the ", data_bytes_,
                                "-byte data section holds"));
  }
  if (tensor.dtype() != dtype) {
    return corrupt(absl::StrCat("is stored as ",
                                ps::DataType_Name(tensor.dtype()),
                                ", expected ", type_name));
  }
  const int64_t length = elements * sizeof(T);
  if (tensor.length() != length) {
    return corrupt(absl::StrCat("has ", tensor.length(), " bytes, expected ",
                                length, " (", elements, " ", type_name,
                                " elements)"));
  }
  if (tensor.offset() < 0 || tensor.offset() > data_bytes_ - length) {
    return corrupt(absl::StrCat("lies outside the data section: bytes [",
                                tensor.offset(), ", +", length, ") of ",
                                data_bytes_, " (truncated or corrupt)"));
  }
  std::vector<T> values(elements);
  absl::Span<char> bytes(reinterpret_cast<char*>(values.data()), length);
  RETURN_IF_ERROR(file_->ReadAt(data_start_ + tensor.offset(), bytes));
  const uint32_t crc = Crc32c(absl::string_view(bytes.data(), bytes.size()));
  if (crc != tensor.crc32c()) {
    return corrupt(absl::StrCat("is corrupt: its CRC32C is ", Hex32(crc),
                                ", the header says ", Hex32(tensor.crc32c())));
  }
  return values;
}

absl::StatusOr<std::vector<float>> ShardFileReader::ReadFloat32(
    const ps::SavedTensor& tensor, int64_t elements,
    absl::string_view what) const {
  return ReadTensor<float>(tensor, ps::FLOAT32, elements, what);
}

absl::StatusOr<std::vector<int64_t>> ShardFileReader::ReadInt64(
    const ps::SavedTensor& tensor, int64_t elements,
    absl::string_view what) const {
  return ReadTensor<int64_t>(tensor, ps::INT64, elements, what);
}

}  // namespace distrt
