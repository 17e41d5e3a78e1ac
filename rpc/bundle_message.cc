#include "rpc/bundle_message.h"

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"
#include "proto/ps_service.pb.h"
#include "rpc/wire_message.h"

namespace distrt::rpc {
namespace {

using google::protobuf::io::CodedInputStream;
using WireFormat = google::protobuf::internal::WireFormatLite;

// BundleRequest.parts / BundleResponse.parts, and BundlePart's fields.
constexpr int kPartsField = 1;
constexpr int kMethodField = 1;
constexpr int kMessageField = 2;
constexpr int kCodeField = 3;
constexpr int kErrorField = 4;

// `length` bytes at the input's position as slices of the buffer being
// read (`keep`, which they hold a reference to), the input moved past them.
bool ReadSlices(CodedInputStream& input, uint32_t length,
                const std::shared_ptr<grpc::ByteBuffer>& keep,
                std::vector<grpc::Slice>* slices) {
  while (length > 0) {
    const void* piece = nullptr;
    int size = 0;
    // Each direct buffer is one of the ByteBuffer's own slices (see
    // wire_message.cc's in-place tensors).
    if (!input.GetDirectBufferPointer(&piece, &size) || size <= 0) {
      return false;
    }
    const uint32_t take = std::min<uint32_t>(length, size);
    slices->emplace_back(
        const_cast<void*>(piece), take,
        [](void* owner) {
          delete static_cast<std::shared_ptr<grpc::ByteBuffer>*>(owner);
        },
        new std::shared_ptr<grpc::ByteBuffer>(keep));
    if (!input.Skip(take)) return false;
    length -= take;
  }
  return true;
}

// Reads a length-delimited field's length, bounded by what is left of the
// `total` bytes.
bool ReadLength(CodedInputStream& input, size_t total, uint32_t* length) {
  return input.ReadVarint32(length) &&
         *length <= total - static_cast<size_t>(input.CurrentPosition());
}

// Reads a BundlePart's fields, the input limited to them; its message as
// slices of `keep`. INVALID_ARGUMENT with what is wrong (the caller names
// the part) when they do not parse.
absl::StatusOr<WirePart> ReadPart(
    CodedInputStream& input, size_t total,
    const std::shared_ptr<grpc::ByteBuffer>& keep) {
  WirePart part;
  // An empty message (left out of the bytes) is still a buffer to read.
  grpc::Slice empty;
  part.message = grpc::ByteBuffer(&empty, 1);
  bool have_message = false;
  while (true) {
    const uint32_t field_tag = input.ReadTag();
    if (field_tag == 0) break;
    const int field = WireFormat::GetTagFieldNumber(field_tag);
    const bool delimited = WireFormat::GetTagWireType(field_tag) ==
                           WireFormat::WIRETYPE_LENGTH_DELIMITED;
    uint32_t bytes = 0;
    if ((field == kMethodField || field == kErrorField) && delimited) {
      if (!ReadLength(input, total, &bytes) ||
          !input.ReadString(field == kMethodField ? &part.method : &part.error,
                            bytes)) {
        return absl::InvalidArgumentError("bad string");
      }
    } else if (field == kMessageField && delimited) {
      if (have_message) {
        return absl::InvalidArgumentError("message appears twice");
      }
      have_message = true;
      std::vector<grpc::Slice> slices;
      if (!ReadLength(input, total, &bytes) ||
          !ReadSlices(input, bytes, keep, &slices)) {
        return absl::InvalidArgumentError("message cut short");
      }
      part.message = grpc::ByteBuffer(slices.data(), slices.size());
    } else if (field == kCodeField && WireFormat::GetTagWireType(field_tag) ==
                                          WireFormat::WIRETYPE_VARINT) {
      uint64_t code = 0;
      if (!input.ReadVarint64(&code)) {
        return absl::InvalidArgumentError("bad code");
      }
      part.code = static_cast<int>(code);
    } else if (!WireFormat::SkipField(&input, field_tag)) {
      return absl::InvalidArgumentError(absl::StrCat("bad field ", field));
    }
  }
  return part;
}

}  // namespace

grpc::ByteBuffer EncodeBundle(const std::vector<WirePart>& parts) {
  std::vector<grpc::Slice> slices;
  for (const WirePart& part : parts) {
    ps::BundlePart fields;
    fields.set_method(part.method);
    fields.set_code(part.code);
    fields.set_error(part.error);
    const std::string header = fields.SerializeAsString();
    const size_t message_bytes = part.message.Length();
    std::string message_tag;
    // proto3 leaves empty bytes out.
    if (message_bytes > 0) {
      AppendLengthDelimitedTag(kMessageField, message_bytes, &message_tag);
    }
    std::string framing;
    AppendLengthDelimitedTag(kPartsField,
                             header.size() + message_tag.size() + message_bytes,
                             &framing);
    framing += header;
    framing += message_tag;
    slices.emplace_back(framing);
    if (message_bytes > 0) {
      std::vector<grpc::Slice> message;
      // Fails only for an uninitialised buffer, which has no bytes.
      (void)part.message.Dump(&message);
      for (grpc::Slice& slice : message) slices.push_back(std::move(slice));
    }
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::StatusOr<std::vector<WirePart>> DecodeBundle(grpc::ByteBuffer* buffer,
                                                   absl::string_view what) {
  const size_t total = buffer->Length();
  if (total > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of ", total, " bytes is over 2 GiB"));
  }
  // A copy of a ByteBuffer shares its slices: the parts' messages point
  // into them and keep this copy alive.
  auto keep = std::make_shared<grpc::ByteBuffer>(*buffer);
  grpc::ProtoBufferReader reader(keep.get());
  CodedInputStream input(&reader);
  input.SetTotalBytesLimit(INT32_MAX);
  std::vector<WirePart> parts;
  const auto malformed = [&](absl::string_view detail) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed ", what, ": part ", parts.size(), ": ", detail));
  };
  while (true) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) break;
    if (WireFormat::GetTagFieldNumber(tag) != kPartsField ||
        WireFormat::GetTagWireType(tag) !=
            WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormat::SkipField(&input, tag)) return malformed("bad field");
      continue;
    }
    uint32_t length = 0;
    if (!ReadLength(input, total, &length)) return malformed("bad length");
    const int end = input.CurrentPosition() + static_cast<int>(length);
    const auto limit = input.PushLimit(length);
    absl::StatusOr<WirePart> part = ReadPart(input, total, keep);
    if (!part.ok()) return malformed(part.status().message());
    if (!input.ConsumedEntireMessage() || input.CurrentPosition() != end) {
      return malformed("cut short");
    }
    input.PopLimit(limit);
    parts.push_back(*std::move(part));
  }
  if (!input.ConsumedEntireMessage() ||
      static_cast<size_t>(input.CurrentPosition()) != total) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", what, ": cut short at byte ",
                     input.CurrentPosition(), " of ", total));
  }
  return parts;
}

}  // namespace distrt::rpc
