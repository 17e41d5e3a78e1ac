#ifndef DISTRT_RPC_WIRE_MESSAGE_H_
#define DISTRT_RPC_WIRE_MESSAGE_H_

// Messages with tensor fields, put on and taken off the wire without copying
// the tensors' elements through protobuf (as TensorFlow's gRPC tensor coding
// does). The bytes are exactly protobuf's encoding of the message, so any
// client or server that uses the .proto (Python, grpcurl) reads and writes
// the same messages; only this side skips the copies.
//
// Encoding: the message's other fields and each tensor's dtype, shape and
// length prefixes go into small slices; each tensor's elements go into a
// slice that points at the caller's memory.
// Decoding: the other fields are parsed into a message as usual; each
// tensor's elements are read once, straight from the received slices into
// memory the caller chooses after seeing their length (the destination
// tensor, or a pooled buffer).
//
// Every tensor field must be a ps::Tensor (proto/variable.proto).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/variable.pb.h"
#include "rpc/tensor_codec.h"

namespace distrt::rpc {

// Appends the tag of length-delimited field `field` and `length`, as
// protobuf encodes them before the field's bytes.
void AppendLengthDelimitedTag(int field, uint64_t length, std::string* out);

// A tensor field to send.
struct OutgoingTensor {
  int field_number = 0;
  ps::DataType dtype = ps::DATA_TYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  absl::Span<const char> data;
  // Keeps `data` alive until gRPC has sent it. When null, `data` is borrowed:
  // it must outlive the call (true of a blocking call's arguments).
  std::shared_ptr<const void> owner;
};

// The bytes of `fields` (a message whose tensor fields are unset) followed
// by `tensors`, as protobuf would encode the whole message.
grpc::ByteBuffer EncodeWithTensors(const google::protobuf::MessageLite& fields,
                                   std::vector<OutgoingTensor> tensors);

// A tensor field to receive.
struct IncomingTensor {
  explicit IncomingTensor(int field) : field_number(field) {}

  const int field_number;
  // Called once, when the length of the elements is known and before they
  // are read: where to put `bytes` bytes. An error refuses the message.
  std::function<absl::StatusOr<char*>(int64_t bytes)> destination;
  // Instead of copying them to a destination, leave the elements where they
  // were received and record where that is in `pieces` (the message's
  // slices: valid while the decoded ByteBuffer lives). For consumers that
  // read the elements once, e.g. a gradient applied as it is read.
  bool in_place = false;

  // What was received. A tensor absent from the message reads as an empty
  // tensor of unspecified dtype.
  ps::DataType dtype = ps::DATA_TYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  char* data = nullptr;
  std::vector<absl::Span<const char>> pieces;  // when in_place
  int64_t bytes = 0;

  TensorView view() const {
    return {dtype, shape, {data, size_t(data == nullptr ? 0 : bytes)}, pieces};
  }
};

// Parses `buffer` into `fields` (every field that is not one of `tensors`)
// and `tensors`. INVALID_ARGUMENT naming `what` (e.g. "PushDense request")
// when the bytes are not a well-formed message: truncated, a length past
// the end, a tensor field that is not length-delimited or that appears
// twice. A destination is never asked for more bytes than the message has.
absl::Status DecodeWithTensors(grpc::ByteBuffer* buffer, absl::string_view what,
                               google::protobuf::MessageLite* fields,
                               absl::Span<IncomingTensor* const> tensors);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_WIRE_MESSAGE_H_
