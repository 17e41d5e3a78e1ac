#ifndef DISTRT_RPC_DATA_PLANE_WIRE_H_
#define DISTRT_RPC_DATA_PLANE_WIRE_H_

// The TCP data plane's wire format (TF_CONFIG "rpc_layer": "grpc+tcp"): the
// tensor RPCs' message bytes (rpc/wire_message.h, the same bytes gRPC would
// carry) over a TCP connection, one call at a time per connection,
// without HTTP/2's framing, flow control and the thread hand-offs of gRPC's
// completion queues. Control (status, variables' creation, checkpoints)
// stays on gRPC, whose GetStatus tells a client the data plane's port.
//
//   client hello   "DISTRTDP" u32 version  u32 token length  token
//   server hello   "DISTRTDP" u32 version  u64 max_message_bytes
//                  u32 task index  u64 incarnation  u64 methods fingerprint
//                  u32 status code  u32 error length  error
//   request        u32 method (rpc/ps_methods.h)  u64 length  bytes
//   response       u32 status code  u32 error length  u64 length
//                  error bytes  message bytes
//
// Integers are little-endian. The server's hello says which ps task it is
// (index and incarnation, as its GetStatus does), so that a client never
// sends one task's tensors to another that took over a port, and which RPCs
// its method numbers mean (MethodsFingerprint), so that binaries whose
// rpc/ps_methods.h differ never talk.
//
// In a job with TLS (rpc/data_plane_tls.h) every byte above goes inside a
// mutual TLS session that starts as soon as the connection does, and the
// client's hello carries the cluster token (empty without one). A server
// that refuses the client (no token, another token) says so in its hello's
// status code and error, and closes the connection.
//
// The helpers below read and write whole frames on a non-blocking socket,
// plain or TLS, within a deadline, giving UNAVAILABLE when the peer closes
// or the socket fails and DEADLINE_EXCEEDED when the deadline passes, each
// naming `peer`.

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"

struct ssl_st;  // OpenSSL's SSL

namespace distrt::rpc {

inline constexpr char kDataPlaneMagic[8] = {'D', 'I', 'S', 'T',
                                            'R', 'T', 'D', 'P'};
inline constexpr uint32_t kDataPlaneVersion = 2;
// The fixed parts of the hellos; the token and the error follow them.
inline constexpr size_t kClientHelloBytes = 16;
inline constexpr size_t kServerHelloBytes = 48;
// Longest token a client hello and error a server hello carry.
inline constexpr uint32_t kMaxHelloTokenBytes = 4096;
inline constexpr uint32_t kMaxHelloErrorBytes = 4096;
inline constexpr size_t kRequestHeaderBytes = 12;
inline constexpr size_t kResponseHeaderBytes = 16;
// Longest error text a response carries (longer ones are cut).
inline constexpr uint32_t kMaxErrorBytes = 64 << 10;

struct RequestHeader {
  uint32_t method = 0;
  uint64_t length = 0;
};

struct ResponseHeader {
  uint32_t code = 0;
  uint32_t error_length = 0;
  uint64_t length = 0;
};

struct ServerHello {
  uint64_t max_message_bytes = 0;
  uint32_t task_index = 0;
  uint64_t incarnation = 0;
  uint64_t methods_fingerprint = 0;
  // Not OK: the server refuses this client (and closes the connection).
  // Only the length of the error goes into the fixed part.
  uint32_t code = 0;
  std::string error;
};

// A connected non-blocking socket and, in a job with TLS, the session
// whose records it carries (owned elsewhere; see rpc/data_plane_tls.h).
struct DataPlaneSocket {
  explicit DataPlaneSocket(int fd, ssl_st* ssl = nullptr) : fd(fd), ssl(ssl) {}
  int fd;
  ssl_st* ssl;
};

// A fingerprint of rpc/ps_methods.h's names in their order: what the
// method numbers of requests mean to this binary.
uint64_t MethodsFingerprint();

// The whole client hello, token included.
std::string EncodeClientHello(absl::string_view token);
// Whether `bytes`, a hello's first kHelloPrefixBytes (magic and version),
// begin a client hello of this version (INVALID_ARGUMENT otherwise): read
// before the rest, so that a client of another version is refused at once
// rather than waited for.
inline constexpr size_t kHelloPrefixBytes = 12;
absl::Status CheckClientHelloPrefix(absl::string_view bytes);
// The length of the token that follows the fixed part `bytes`;
// INVALID_ARGUMENT when `bytes` is not a client hello of this version or
// announces a token longer than kMaxHelloTokenBytes.
absl::StatusOr<uint32_t> DecodeClientHello(absl::string_view bytes);
// The whole server hello, error included (cut at kMaxHelloErrorBytes).
std::string EncodeServerHello(const ServerHello& hello);
// The fixed part `bytes`, and in `error_length` the length of the error
// that follows it (its `error` is left empty); INVALID_ARGUMENT when it is
// not a server hello of this version or announces a longer error than
// kMaxHelloErrorBytes.
absl::StatusOr<ServerHello> DecodeServerHello(absl::string_view bytes,
                                              uint32_t* error_length);

std::string EncodeRequestHeader(const RequestHeader& header);
RequestHeader DecodeRequestHeader(absl::string_view bytes);
std::string EncodeResponseHeader(const ResponseHeader& header);
ResponseHeader DecodeResponseHeader(absl::string_view bytes);

// Waits until `fd` is ready for poll's `events` or `deadline` passes.
absl::Status AwaitSocket(int fd, short events, absl::Time deadline,
                         absl::string_view peer);

// Reads exactly `out.size()` bytes.
absl::Status ReadExactly(const DataPlaneSocket& socket, absl::Span<char> out,
                         absl::Time deadline, absl::string_view peer);
// Writes every byte of `parts`, in order. Over TLS, small parts are
// gathered into records of up to 16 KiB rather than one record each.
absl::Status WriteAll(const DataPlaneSocket& socket, std::vector<iovec> parts,
                      absl::Time deadline, absl::string_view peer);

// A message's bytes as gRPC holds them, for WriteAll: `slices` keeps them
// alive, the returned iovecs point into them.
std::vector<iovec> MessageParts(const grpc::ByteBuffer& message,
                                std::vector<grpc::Slice>& slices);

// Reads a `length`-byte message into new gRPC slices of at most 1 MiB,
// each allocated as its bytes arrive (a peer that announces a large
// message and sends nothing costs nothing), as a ByteBuffer that the
// decoders of rpc/wire_message.h read like a received one.
absl::StatusOr<grpc::ByteBuffer> ReadMessage(const DataPlaneSocket& socket,
                                             uint64_t length,
                                             absl::Time deadline,
                                             absl::string_view peer);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_DATA_PLANE_WIRE_H_
