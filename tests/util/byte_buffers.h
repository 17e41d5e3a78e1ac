#ifndef DISTRT_TESTS_UTIL_BYTE_BUFFERS_H_
#define DISTRT_TESTS_UTIL_BYTE_BUFFERS_H_

// grpc::ByteBuffers from strings and back, for tests of what goes on the
// wire (gRPC messages, the TCP data plane's, bundles).

#include <string>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace distrt::testing {

// `bytes` in one slice.
inline grpc::ByteBuffer BufferOf(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// `pieces` one after another, one slice each: what a reader that must
// cross slice boundaries is given.
inline grpc::ByteBuffer BufferOfPieces(const std::vector<std::string>& pieces) {
  std::vector<grpc::Slice> slices;
  for (const std::string& piece : pieces) slices.emplace_back(piece);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// Every byte of `buffer`; empty when it is not valid or cannot be read,
// which the caller's comparison then shows.
inline std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Valid() || !buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_BYTE_BUFFERS_H_
