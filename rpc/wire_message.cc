#include "rpc/wire_message.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using WireFormat = google::protobuf::internal::WireFormatLite;

// ps::Tensor's field numbers.
constexpr int kDTypeField = 1;
constexpr int kShapeField = 2;
constexpr int kDataField = 3;

// The tensor message up to (not including) its elements.
std::string TensorHeader(const OutgoingTensor& tensor) {
  std::string header;
  StringOutputStream stream(&header);
  {
    CodedOutputStream coded(&stream);
    if (tensor.dtype != ps::DATA_TYPE_UNSPECIFIED) {
      coded.WriteTag(
          WireFormat::MakeTag(kDTypeField, WireFormat::WIRETYPE_VARINT));
      coded.WriteVarint64(static_cast<uint64_t>(tensor.dtype));
    }
    if (!tensor.shape.empty()) {  // packed, as proto3 writes repeated int64
      size_t length = 0;
      for (int64_t dim : tensor.shape) {
        length += CodedOutputStream::VarintSize64(static_cast<uint64_t>(dim));
      }
      coded.WriteTag(WireFormat::MakeTag(
          kShapeField, WireFormat::WIRETYPE_LENGTH_DELIMITED));
      coded.WriteVarint64(length);
      for (int64_t dim : tensor.shape) {
        coded.WriteVarint64(static_cast<uint64_t>(dim));
      }
    }
    if (!tensor.data.empty()) {  // proto3 leaves empty bytes out
      coded.WriteTag(WireFormat::MakeTag(
          kDataField, WireFormat::WIRETYPE_LENGTH_DELIMITED));
      coded.WriteVarint64(tensor.data.size());
    }
  }
  return header;
}

grpc::Slice DataSlice(const OutgoingTensor& tensor) {
  void* data = const_cast<char*>(tensor.data.data());
  if (tensor.owner == nullptr) {
    return grpc::Slice(data, tensor.data.size(), grpc::Slice::STATIC_SLICE);
  }
  return grpc::Slice(
      data, tensor.data.size(),
      [](void* owner) {
        delete static_cast<std::shared_ptr<const void>*>(owner);
      },
      new std::shared_ptr<const void>(tensor.owner));
}

// Reads a packed repeated int64 (its length first) onto `shape`. False when
// it does not parse.
bool ReadPackedShape(CodedInputStream& input, std::vector<int64_t>* shape) {
  uint32_t packed = 0;
  if (!input.ReadVarint32(&packed)) return false;
  const auto limit = input.PushLimit(packed);
  while (input.BytesUntilLimit() > 0) {
    uint64_t dim = 0;
    if (!input.ReadVarint64(&dim)) return false;
    shape->push_back(static_cast<int64_t>(dim));
  }
  input.PopLimit(limit);
  return true;
}

// Appends to `pieces` the next `bytes` bytes of the input, in place, and
// moves past them; false when the input ends first.
//
// Each direct buffer of the stream is one of the ByteBuffer's own slices,
// read in place (grpc_byte_buffer_reader_peek in gRPC 1.51; messages reach
// us already decompressed by the channel, so the reader makes no copy of its
// own), and so stays valid while the ByteBuffer lives.
bool ReadPiecesInPlace(CodedInputStream& input, uint32_t bytes,
                       std::vector<absl::Span<const char>>* pieces) {
  uint32_t left = bytes;
  while (left > 0) {
    const void* piece = nullptr;
    int size = 0;
    if (!input.GetDirectBufferPointer(&piece, &size) || size <= 0) {
      return false;
    }
    const uint32_t take = std::min<uint32_t>(left, size);
    pieces->emplace_back(static_cast<const char*>(piece), take);
    if (!input.Skip(take)) return false;
    left -= take;
  }
  return true;
}

// Reads a ps::Tensor of `length` bytes (the input limited to it) into
// `tensor`.
absl::Status ReadTensor(CodedInputStream& input, int64_t length,
                        IncomingTensor* tensor, absl::string_view what) {
  const auto malformed = [&](absl::string_view detail) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", what, ": tensor field ",
                     tensor->field_number, ": ", detail));
  };
  const int start = input.CurrentPosition();
  bool have_data = false;
  int tag_at = start;
  while (true) {
    tag_at = input.CurrentPosition();
    const uint32_t tag = input.ReadTag();
    if (tag == 0) break;
    const int field = WireFormat::GetTagFieldNumber(tag);
    const auto wire_type = WireFormat::GetTagWireType(tag);
    if (field == kDTypeField && wire_type == WireFormat::WIRETYPE_VARINT) {
      uint64_t dtype = 0;
      if (!input.ReadVarint64(&dtype)) return malformed("bad dtype");
      tensor->dtype = static_cast<ps::DataType>(dtype);
    } else if (field == kShapeField &&
               wire_type == WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      if (!ReadPackedShape(input, &tensor->shape)) {
        return malformed("bad shape");
      }
    } else if (field == kShapeField &&
               wire_type == WireFormat::WIRETYPE_VARINT) {
      uint64_t dim = 0;  // an unpacked repeated field: one element per tag
      if (!input.ReadVarint64(&dim)) return malformed("bad shape");
      tensor->shape.push_back(static_cast<int64_t>(dim));
    } else if (field == kDataField &&
               wire_type == WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t bytes = 0;
      if (!input.ReadVarint32(&bytes)) return malformed("bad data length");
      if (have_data) return malformed("elements appear twice");
      if (bytes > static_cast<uint32_t>(input.BytesUntilLimit())) {
        return malformed(
            absl::StrCat("elements of ", bytes, " bytes run past the end"));
      }
      have_data = true;
      if (bytes == 0) continue;
      if (tensor->in_place) {
        if (!ReadPiecesInPlace(input, bytes, &tensor->pieces)) {
          return malformed("elements cut short");
        }
        tensor->bytes = bytes;
        continue;
      }
      ASSIGN_OR_RETURN(char* destination,
                       tensor->destination
                           ? tensor->destination(bytes)
                           : absl::InternalError("no destination"));
      if (!input.ReadRaw(destination, bytes)) {
        return malformed("elements cut short");
      }
      tensor->data = destination;
      tensor->bytes = bytes;
    } else if (!WireFormat::SkipField(&input, tag)) {
      return malformed(absl::StrCat("bad field ", field));
    }
  }
  if (!input.ConsumedEntireMessage()) {
    // A tag that does not parse reads as 0, as the end of the message does.
    return malformed(absl::StrCat("bad tag at byte ", tag_at));
  }
  if (input.CurrentPosition() - start != length) {
    return malformed("cut short");
  }
  return absl::OkStatus();
}

}  // namespace

void AppendLengthDelimitedTag(int field, uint64_t length, std::string* out) {
  StringOutputStream stream(out);
  CodedOutputStream coded(&stream);
  coded.WriteTag(
      WireFormat::MakeTag(field, WireFormat::WIRETYPE_LENGTH_DELIMITED));
  coded.WriteVarint64(length);
}

grpc::ByteBuffer EncodeWithTensors(const google::protobuf::MessageLite& fields,
                                   std::vector<OutgoingTensor> tensors) {
  std::vector<grpc::Slice> slices;
  std::string framing = fields.SerializeAsString();
  for (const OutgoingTensor& tensor : tensors) {
    const std::string header = TensorHeader(tensor);
    AppendLengthDelimitedTag(tensor.field_number,
                             header.size() + tensor.data.size(), &framing);
    framing += header;
    slices.emplace_back(framing);
    framing.clear();
    if (!tensor.data.empty()) slices.push_back(DataSlice(tensor));
  }
  if (!framing.empty()) slices.emplace_back(framing);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::Status DecodeWithTensors(grpc::ByteBuffer* buffer, absl::string_view what,
                               google::protobuf::MessageLite* fields,
                               absl::Span<IncomingTensor* const> tensors) {
  const size_t total = buffer->Length();
  if (total > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of ", total, " bytes is over 2 GiB"));
  }
  const auto malformed = [&](absl::string_view detail) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", what, ": ", detail));
  };
  grpc::ProtoBufferReader reader(buffer);
  CodedInputStream input(&reader);
  input.SetTotalBytesLimit(INT32_MAX);
  // The fields that are not tensors, copied as they come, parsed at the end.
  std::string others;
  std::vector<bool> seen(tensors.size(), false);
  int tag_at = 0;
  {
    StringOutputStream others_stream(&others);
    CodedOutputStream others_out(&others_stream);
    while (true) {
      tag_at = input.CurrentPosition();
      const uint32_t tag = input.ReadTag();
      if (tag == 0) break;
      const int field = WireFormat::GetTagFieldNumber(tag);
      size_t index = 0;
      while (index < tensors.size() && tensors[index]->field_number != field) {
        ++index;
      }
      if (index == tensors.size()) {
        if (!WireFormat::SkipField(&input, tag, &others_out)) {
          return malformed(absl::StrCat("bad field ", field));
        }
        continue;
      }
      if (WireFormat::GetTagWireType(tag) !=
          WireFormat::WIRETYPE_LENGTH_DELIMITED) {
        return malformed(
            absl::StrCat("tensor field ", field, " is not length-delimited"));
      }
      if (seen[index]) {
        return malformed(
            absl::StrCat("tensor field ", field, " appears twice"));
      }
      seen[index] = true;
      uint32_t length = 0;
      if (!input.ReadVarint32(&length)) return malformed("bad length");
      if (length > total - input.CurrentPosition()) {
        return malformed(absl::StrCat("tensor field ", field, " of ", length,
                                      " bytes runs past the end"));
      }
      const auto limit = input.PushLimit(length);
      RETURN_IF_ERROR(ReadTensor(input, length, tensors[index], what));
      input.PopLimit(limit);
    }
  }
  if (!input.ConsumedEntireMessage()) {
    // A tag that does not parse reads as 0, as the end of the message does.
    return malformed(absl::StrCat("bad tag at byte ", tag_at));
  }
  if (static_cast<size_t>(input.CurrentPosition()) != total) {
    return malformed(absl::StrCat("cut short at byte ", input.CurrentPosition(),
                                  " of ", total));
  }
  if (!fields->ParseFromString(others)) {
    return malformed("bad fields");
  }
  return absl::OkStatus();
}

}  // namespace distrt::rpc
