#include "runtime/export/npy_file.h"

#include <cstring>
#include <limits>
#include <utility>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The data of every array starts at a multiple of this (NumPy's own
// alignment since 1.14, more than any element type needs).
constexpr int64_t kAlignment = 64;
constexpr int64_t kPreambleBytes = 10;  // magic, version, header length

#if !defined(ABSL_IS_LITTLE_ENDIAN)
#error "npy_file.cc writes elements as they are in memory: little-endian only"
#endif

const char* Descr(NpyType type) {
  return type == NpyType::kFloat32 ? "<f4" : "<i8";
}

int64_t ElementBytes(NpyType type) { return type == NpyType::kFloat32 ? 4 : 8; }

// NumPy's repr of a shape tuple: "()", "(3,)", "(3, 4)".
std::string ShapeTuple(absl::Span<const int64_t> shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// The number of elements, or INVALID_ARGUMENT for a negative dimension or
// a product beyond int64.
absl::StatusOr<int64_t> ElementCount(absl::Span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "array shape ", ShapeTuple(shape), " has a negative dimension"));
    }
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / 8 / d) {
      return absl::InvalidArgumentError(absl::StrCat(
          "array shape ", ShapeTuple(shape), " has too many elements"));
    }
    count *= d;
  }
  return count;
}

}  // namespace

absl::StatusOr<std::string> NpyHeader(NpyType type,
                                      absl::Span<const int64_t> shape) {
  RETURN_IF_ERROR(ElementCount(shape).status());
  std::string dict =
      absl::StrCat("{'descr': '", Descr(type), "', 'fortran_order': False, ",
                   "'shape': ", ShapeTuple(shape), ", }");
  // Spaces, then '\n', up to the alignment.
  const int64_t unpadded = kPreambleBytes + dict.size() + 1;
  const int64_t padded = (unpadded + kAlignment - 1) / kAlignment * kAlignment;
  dict.append(padded - unpadded, ' ');
  dict.push_back('\n');
  const uint16_t length = static_cast<uint16_t>(dict.size());
  std::string header("\x93NUMPY\x01\x00", 8);
  header.push_back(static_cast<char>(length & 0xff));
  header.push_back(static_cast<char>(length >> 8));
  return header + dict;
}

absl::StatusOr<std::unique_ptr<NpyWriter>> NpyWriter::Create(
    const std::string& path, NpyType type, std::vector<int64_t> shape) {
  ASSIGN_OR_RETURN(const std::string header, NpyHeader(type, shape));
  ASSIGN_OR_RETURN(const int64_t elements, ElementCount(shape));
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                   AtomicFileWriter::Create(path));
  RETURN_IF_ERROR(file->Append(header));
  return std::unique_ptr<NpyWriter>(
      new NpyWriter(std::move(file), type, header.size(), elements));
}

absl::Status NpyWriter::Append(absl::Span<const float> values) {
  return AppendBytes(NpyType::kFloat32, values.data(), values.size());
}

absl::Status NpyWriter::Append(absl::Span<const int64_t> values) {
  return AppendBytes(NpyType::kInt64, values.data(), values.size());
}

absl::Status NpyWriter::AppendBytes(NpyType type, const void* data,
                                    int64_t count) {
  if (type != type_) {
    return absl::InternalError(absl::StrCat(path(), ": appending ", Descr(type),
                                            " elements to a ", Descr(type_),
                                            " array"));
  }
  if (count > elements_ - appended_) {
    return absl::InternalError(
        absl::StrCat(path(), ": appending ", count, " elements to the ",
                     appended_, " of ", elements_, " already there"));
  }
  appended_ += count;
  if (count == 0) return absl::OkStatus();
  return file_->Append(absl::string_view(static_cast<const char*>(data),
                                         count * ElementBytes(type_)));
}

absl::Status NpyWriter::Commit() {
  if (appended_ != elements_) {
    return absl::FailedPreconditionError(
        absl::StrCat(path(), ": ", appended_, " elements written of the ",
                     elements_, " its shape holds"));
  }
  return file_->Commit();
}

int64_t NpyWriter::file_bytes() const {
  return header_bytes_ + elements_ * ElementBytes(type_);
}

}  // namespace distrt
