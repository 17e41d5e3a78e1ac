#include "rpc/data_plane_connection.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rpc/data_plane_wire.h"
#include "rpc/tcp_sockets.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

// Largest error text and response this client takes from a server: beyond
// them the stream is not a ps task's answer.
constexpr uint64_t kMaxResponseSlack = 1 << 20;

// Sends this client's hello (carrying `token`) and reads the server's,
// with its error text when it has one.
absl::StatusOr<ServerHello> ExchangeHellos(const DataPlaneSocket& socket,
                                           absl::string_view token,
                                           absl::Time deadline,
                                           const std::string& peer) {
  const std::string hello = EncodeClientHello(token);
  char answer[kServerHelloBytes];
  RETURN_IF_ERROR(WriteAll(socket,
                           {{const_cast<char*>(hello.data()), hello.size()}},
                           deadline, peer));
  RETURN_IF_ERROR(ReadExactly(socket, absl::MakeSpan(answer), deadline, peer));
  uint32_t error_length = 0;
  ASSIGN_OR_RETURN(ServerHello server,
                   DecodeServerHello(absl::string_view(answer, sizeof(answer)),
                                     &error_length));
  if (error_length > 0) {
    server.error.resize(error_length);
    RETURN_IF_ERROR(
        ReadExactly(socket, absl::MakeSpan(server.error), deadline, peer));
  }
  return server;
}

// Why the server at `peer` is not the data plane of the ps task `expected`
// (no hello, its refusal, other method numbers, another task or start of
// it); OK when it is.
absl::Status CheckServerHello(const absl::StatusOr<ServerHello>& server,
                              const DataPlaneConnection::Expected& expected,
                              const std::string& peer) {
  if (!server.ok()) {
    const absl::Status& s = server.status();
    return absl::Status(
        s.code() == absl::StatusCode::kInvalidArgument
            ? absl::StatusCode::kUnavailable
            : s.code(),
        absl::StrCat("TCP data plane at ", peer, ": no hello: ", s.message()));
  }
  if (server->code != 0) {
    const auto code = static_cast<absl::StatusCode>(server->code);
    return absl::Status(
        code == absl::StatusCode::kOk ? absl::StatusCode::kUnknown : code,
        absl::StrCat("TCP data plane at ", peer,
                     " refused this client: ", server->error));
  }
  if (server->methods_fingerprint != MethodsFingerprint()) {
    return absl::UnavailableError(absl::StrCat(
        "TCP data plane at ", peer,
        " numbers its RPCs differently (a ps_server of another version)"));
  }
  if (static_cast<int>(server->task_index) != expected.task_index ||
      server->incarnation != expected.incarnation) {
    return absl::UnavailableError(absl::StrCat(
        "TCP data plane at ", peer, " is ps task ", server->task_index,
        " (incarnation ", absl::Hex(server->incarnation, absl::kZeroPad16),
        "), not ps task ", expected.task_index, " (incarnation ",
        absl::Hex(expected.incarnation, absl::kZeroPad16), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataPlaneConnection>>
DataPlaneConnection::Connect(const std::string& host, int port,
                             const Expected& expected, absl::Time deadline,
                             const DataPlaneTls* tls) {
  const std::string peer = HostPortText(host, port);
  absl::StatusOr<int> connected = ConnectTcp(host, port, deadline);
  if (!connected.ok()) {
    return absl::Status(connected.status().code(),
                        absl::StrCat("TCP data plane at ", peer, ": ",
                                     connected.status().message()));
  }
  const int fd = *connected;
  DataPlaneTls::Session session;
  if (tls != nullptr) {
    absl::StatusOr<DataPlaneTls::Session> started =
        tls->Connect(fd, host, deadline, peer);
    if (!started.ok()) {
      close(fd);
      return started.status();
    }
    session = *std::move(started);
  }
  const absl::StatusOr<ServerHello> server =
      ExchangeHellos(DataPlaneSocket(fd, session.get()),
                     tls != nullptr ? tls->token() : "", deadline, peer);
  if (absl::Status refused = CheckServerHello(server, expected, peer);
      !refused.ok()) {
    session.reset();
    close(fd);
    return refused;
  }
  // A server's word on its limit is bounded here, so that no sum below
  // overflows.
  const uint64_t limit =
      std::min<uint64_t>(server->max_message_bytes, uint64_t{1} << 40);
  return std::unique_ptr<DataPlaneConnection>(
      new DataPlaneConnection(fd, std::move(session), peer, limit));
}

// The session, freed after this, sends nothing: its BIO never touches the
// descriptor again.
DataPlaneConnection::~DataPlaneConnection() { close(fd_); }

absl::Status DataPlaneConnection::Send(int method,
                                       const grpc::ByteBuffer& request,
                                       absl::Time deadline) {
  std::vector<grpc::Slice> slices;
  std::vector<iovec> message = MessageParts(request, slices);
  uint64_t length = 0;
  for (const iovec& part : message) length += part.iov_len;
  if (length > max_message_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a request of ", length, " bytes is larger than the ps task at ", peer_,
        " accepts (", max_message_bytes_, ")"));
  }
  std::string header =
      EncodeRequestHeader({static_cast<uint32_t>(method), length});
  std::vector<iovec> parts;
  parts.reserve(message.size() + 1);
  parts.push_back({header.data(), header.size()});
  parts.insert(parts.end(), message.begin(), message.end());
  return WriteAll(socket_, std::move(parts), deadline, peer_);
}

absl::Status DataPlaneConnection::Receive(absl::Time deadline,
                                          grpc::Status* status,
                                          grpc::ByteBuffer* response) {
  char bytes[kResponseHeaderBytes];
  if (absl::Status s =
          ReadExactly(socket_, absl::MakeSpan(bytes), deadline, peer_);
      !s.ok()) {
    return s;
  }
  const ResponseHeader header =
      DecodeResponseHeader(absl::string_view(bytes, sizeof(bytes)));
  if (header.code > static_cast<uint32_t>(grpc::StatusCode::UNAUTHENTICATED) ||
      header.error_length > kMaxErrorBytes ||
      header.length > max_message_bytes_ + kMaxResponseSlack ||
      (header.code != 0 && header.length != 0)) {
    return absl::InternalError(absl::StrCat(
        "TCP data plane at ", peer_, " sent a malformed answer (status ",
        header.code, ", ", header.error_length, " bytes of error, ",
        header.length, " bytes of message)"));
  }
  std::string error(header.error_length, '\0');
  if (absl::Status s =
          ReadExactly(socket_, absl::MakeSpan(error), deadline, peer_);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<grpc::ByteBuffer> message =
      ReadMessage(socket_, header.length, deadline, peer_);
  if (!message.ok()) return message.status();
  *status = grpc::Status(static_cast<grpc::StatusCode>(header.code), error);
  *response = *std::move(message);
  return absl::OkStatus();
}

}  // namespace distrt::rpc
