#ifndef DISTRT_RPC_BUNDLE_MESSAGE_H_
#define DISTRT_RPC_BUNDLE_MESSAGE_H_

// The Bundle RPC's messages (proto/ps_service.proto: BundleRequest,
// BundleResponse): several tensor RPCs' messages to one ps task in one
// call. Each part's message stays in the slices it came in or was encoded
// into: EncodeBundle frames the parts around them, and DecodeBundle hands
// each part's message out as slices of the received bytes, so bundling
// copies no tensor. The bytes are protobuf's encoding of the messages.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/byte_buffer.h"

namespace distrt::rpc {

// A BundlePart with its message as message bytes.
struct WirePart {
  std::string method;        // request parts: the RPC, e.g. "PullSparse"
  grpc::ByteBuffer message;  // the RPC's request, or its response
  int code = 0;              // response parts: gRPC status code (0: OK)
  std::string error;         // response parts: the error message
};

// A BundleRequest or BundleResponse of `parts`, sharing their messages'
// slices.
grpc::ByteBuffer EncodeBundle(const std::vector<WirePart>& parts);

// The parts of a BundleRequest or BundleResponse; their messages share
// `buffer`'s slices (and keep them alive), and a part without one gets an
// empty message. Stricter than protobuf, which keeps the last of repeated
// singular fields: a part whose message appears twice is malformed.
// INVALID_ARGUMENT naming `what`
// (e.g. "Bundle request") when the bytes are not a well-formed message.
absl::StatusOr<std::vector<WirePart>> DecodeBundle(grpc::ByteBuffer* buffer,
                                                   absl::string_view what);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_BUNDLE_MESSAGE_H_
