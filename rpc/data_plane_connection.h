#ifndef DISTRT_RPC_DATA_PLANE_CONNECTION_H_
#define DISTRT_RPC_DATA_PLANE_CONNECTION_H_

// DataPlaneConnection: a client's connection to a ps task's TCP data plane
// (rpc/data_plane_wire.h), one call at a time: Send a request, then Receive
// its answer. Every step is bounded by a deadline. An error of the
// connection itself (UNAVAILABLE, DEADLINE_EXCEEDED, or a malformed answer
// as INTERNAL) leaves it unusable: the caller drops it and connects anew.
// Not thread-safe; one caller at a time.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"
#include "rpc/data_plane_tls.h"
#include "rpc/data_plane_wire.h"

namespace distrt::rpc {

class DataPlaneConnection {
 public:
  // Who the client means to reach: a ps task as its GetStatus described it.
  struct Expected {
    int task_index = 0;
    uint64_t incarnation = 0;
  };
  // Connects to `host`:`port` and exchanges hellos, by `deadline`: inside
  // a TLS session when `tls` is set (the job's; see rpc/data_plane_tls.h),
  // its hello carrying the job's token. UNAVAILABLE naming the address
  // when it is refused or unreachable, is not a data plane, fails the TLS
  // handshake, speaks other method numbers, or is another ps task (or
  // another start of it) than `expected`; DEADLINE_EXCEEDED; the ps task's
  // own refusal (UNAUTHENTICATED, PERMISSION_DENIED: the token).
  static absl::StatusOr<std::unique_ptr<DataPlaneConnection>> Connect(
      const std::string& host, int port, const Expected& expected,
      absl::Time deadline, const DataPlaneTls* tls = nullptr);
  ~DataPlaneConnection();

  DataPlaneConnection(const DataPlaneConnection&) = delete;
  DataPlaneConnection& operator=(const DataPlaneConnection&) = delete;

  // Sends a request of RPC `method` (rpc/ps_methods.h). RESOURCE_EXHAUSTED
  // (nothing sent, the connection still usable) when it is larger than the
  // server accepts.
  absl::Status Send(int method, const grpc::ByteBuffer& request,
                    absl::Time deadline);
  // The answer to the request sent: the server's status in `status`, its
  // response bytes in `response` when that is OK. The returned error is the
  // connection's own.
  absl::Status Receive(absl::Time deadline, grpc::Status* status,
                       grpc::ByteBuffer* response);

  const std::string& peer() const { return peer_; }

 private:
  DataPlaneConnection(int fd, DataPlaneTls::Session session, std::string peer,
                      uint64_t max_message_bytes)
      : fd_(fd),
        session_(std::move(session)),
        socket_(fd, session_.get()),
        peer_(std::move(peer)),
        max_message_bytes_(max_message_bytes) {}

  const int fd_;
  const DataPlaneTls::Session session_;  // null on plain TCP
  const DataPlaneSocket socket_;
  const std::string peer_;
  const uint64_t max_message_bytes_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_DATA_PLANE_CONNECTION_H_
