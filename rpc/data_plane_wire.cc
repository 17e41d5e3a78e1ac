#include "rpc/data_plane_wire.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpc/slice.h"
#include "openssl/err.h"
#include "openssl/ssl.h"
#include "rpc/ps_methods.h"

namespace distrt::rpc {
namespace {

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetU32(absl::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= uint32_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  }
  return v;
}
uint64_t GetU64(absl::string_view bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  }
  return v;
}

absl::Status CheckHello(absl::string_view bytes, size_t size,
                        absl::string_view who) {
  if (bytes.size() != size || std::memcmp(bytes.data(), kDataPlaneMagic,
                                          sizeof(kDataPlaneMagic)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a distrt TCP data plane ", who, " hello"));
  }
  const uint32_t version = GetU32(bytes, 8);
  if (version != kDataPlaneVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("TCP data plane ", who, " speaks version ", version,
                     ", this one ", kDataPlaneVersion));
  }
  return absl::OkStatus();
}

// What to wait for after an SSL_read or SSL_write that returned `result`
// <= 0: the socket readable (POLLIN) or writable (POLLOUT); or the error
// that ends the connection. `what` is "read" or "write".
absl::StatusOr<short> AfterSslFailure(ssl_st* ssl, int result,
                                      absl::string_view what,
                                      absl::string_view peer) {
  const int saved_errno = errno;
  switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ:
      return POLLIN;
    case SSL_ERROR_WANT_WRITE:
      return POLLOUT;
    case SSL_ERROR_ZERO_RETURN:
      return absl::UnavailableError(
          absl::StrCat("TCP data plane to ", peer, ": connection closed"));
    case SSL_ERROR_SYSCALL:
      // (The socket BIO turns EINTR into a retry: it never gets here.)
      if (saved_errno == 0 || saved_errno == EPIPE ||
          saved_errno == ECONNRESET) {
        return absl::UnavailableError(
            absl::StrCat("TCP data plane to ", peer, ": connection closed"));
      }
      return absl::UnavailableError(
          absl::StrCat("TCP data plane to ", peer, ": ", what,
                       " failed: ", std::strerror(saved_errno)));
    default: {
      char text[256] = "unknown TLS error";
      if (const unsigned long error = ERR_get_error(); error != 0) {
        ERR_error_string_n(error, text, sizeof(text));
      }
      ERR_clear_error();
      return absl::UnavailableError(absl::StrCat(
          "TCP data plane to ", peer, ": TLS ", what, " failed: ", text));
    }
  }
}

// Moves `size` bytes through the session: `step(done, n)` reads or writes
// (SSL_read / SSL_write) up to `n` bytes at offset `done` and returns what
// OpenSSL returned, and the socket is waited on as OpenSSL asks. Writes
// are partial (SSL_MODE_ENABLE_PARTIAL_WRITE) and retried with the same
// bytes.
template <typename Step>
absl::Status SslTransfer(ssl_st* ssl, int fd, size_t size,
                         absl::string_view what, absl::Time deadline,
                         absl::string_view peer, Step step) {
  size_t done = 0;
  while (done < size) {
    ERR_clear_error();
    const int n = step(
        done, static_cast<int>(std::min<size_t>(size - done, size_t{1} << 20)));
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    absl::StatusOr<short> wait = AfterSslFailure(ssl, n, what, peer);
    if (!wait.ok()) return wait.status();
    if (absl::Status s = AwaitSocket(fd, *wait, deadline, peer); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status SslReadExactly(ssl_st* ssl, int fd, absl::Span<char> out,
                            absl::Time deadline, absl::string_view peer) {
  return SslTransfer(
      ssl, fd, out.size(), "read", deadline, peer,
      [&](size_t done, int n) { return SSL_read(ssl, out.data() + done, n); });
}

absl::Status SslWrite(ssl_st* ssl, int fd, const char* data, size_t size,
                      absl::Time deadline, absl::string_view peer) {
  return SslTransfer(
      ssl, fd, size, "write", deadline, peer,
      [&](size_t done, int n) { return SSL_write(ssl, data + done, n); });
}

// Headers and small slices are gathered so that each does not cost a TLS
// record (29 bytes and a seal) of its own.
absl::Status SslWriteAll(ssl_st* ssl, int fd, const std::vector<iovec>& parts,
                         absl::Time deadline, absl::string_view peer) {
  constexpr size_t kGather = 16 << 10;
  std::string gathered;
  for (const iovec& part : parts) {
    const char* data = static_cast<const char*>(part.iov_base);
    if (gathered.size() + part.iov_len <= kGather) {
      gathered.append(data, part.iov_len);
      continue;
    }
    if (!gathered.empty()) {
      if (absl::Status s = SslWrite(ssl, fd, gathered.data(), gathered.size(),
                                    deadline, peer);
          !s.ok()) {
        return s;
      }
      gathered.clear();
    }
    if (part.iov_len < kGather) {
      gathered.append(data, part.iov_len);
    } else {
      if (absl::Status s =
              SslWrite(ssl, fd, data, part.iov_len, deadline, peer);
          !s.ok()) {
        return s;
      }
    }
  }
  if (gathered.empty()) return absl::OkStatus();
  return SslWrite(ssl, fd, gathered.data(), gathered.size(), deadline, peer);
}

}  // namespace

absl::Status AwaitSocket(int fd, short events, absl::Time deadline,
                         absl::string_view peer) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError(
            absl::StrCat("TCP data plane to ", peer, ": deadline passed"));
      }
      timeout_ms = static_cast<int>(std::min<int64_t>(
          absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
          INT32_MAX));
    }
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, timeout_ms);
    if (n > 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat(
          "TCP data plane to ", peer, ": poll failed: ", std::strerror(errno)));
    }
  }
}

std::string EncodeClientHello(absl::string_view token) {
  std::string out(kDataPlaneMagic, sizeof(kDataPlaneMagic));
  PutU32(out, kDataPlaneVersion);
  PutU32(out, static_cast<uint32_t>(token.size()));
  out.append(token.data(), token.size());
  return out;
}

absl::Status CheckClientHelloPrefix(absl::string_view bytes) {
  return CheckHello(bytes, kHelloPrefixBytes, "client");
}

absl::StatusOr<uint32_t> DecodeClientHello(absl::string_view bytes) {
  if (absl::Status s = CheckHello(bytes, kClientHelloBytes, "client");
      !s.ok()) {
    return s;
  }
  const uint32_t token_length = GetU32(bytes, 12);
  if (token_length > kMaxHelloTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a TCP data plane client hello announces a token of ", token_length,
        " bytes (at most ", kMaxHelloTokenBytes, ")"));
  }
  return token_length;
}

uint64_t MethodsFingerprint() {
  // FNV-1a over the names, each ended by a zero byte.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const char* name : kPsMethodNames) {
    for (const char* c = name;; ++c) {
      hash = (hash ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
      if (*c == '\0') break;
    }
  }
  return hash;
}

std::string EncodeServerHello(const ServerHello& hello) {
  std::string out(kDataPlaneMagic, sizeof(kDataPlaneMagic));
  PutU32(out, kDataPlaneVersion);
  PutU64(out, hello.max_message_bytes);
  PutU32(out, hello.task_index);
  PutU64(out, hello.incarnation);
  PutU64(out, hello.methods_fingerprint);
  const absl::string_view error =
      absl::string_view(hello.error).substr(0, kMaxHelloErrorBytes);
  PutU32(out, hello.code);
  PutU32(out, static_cast<uint32_t>(error.size()));
  out.append(error.data(), error.size());
  return out;
}

absl::StatusOr<ServerHello> DecodeServerHello(absl::string_view bytes,
                                              uint32_t* error_length) {
  if (absl::Status s = CheckHello(bytes, kServerHelloBytes, "server");
      !s.ok()) {
    return s;
  }
  ServerHello hello;
  hello.max_message_bytes = GetU64(bytes, 12);
  hello.task_index = GetU32(bytes, 20);
  hello.incarnation = GetU64(bytes, 24);
  hello.methods_fingerprint = GetU64(bytes, 32);
  hello.code = GetU32(bytes, 40);
  *error_length = GetU32(bytes, 44);
  if (*error_length > kMaxHelloErrorBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a TCP data plane server hello announces an error of ", *error_length,
        " bytes (at most ", kMaxHelloErrorBytes, ")"));
  }
  return hello;
}

std::string EncodeRequestHeader(const RequestHeader& header) {
  std::string out;
  PutU32(out, header.method);
  PutU64(out, header.length);
  return out;
}

RequestHeader DecodeRequestHeader(absl::string_view bytes) {
  return {GetU32(bytes, 0), GetU64(bytes, 4)};
}

std::string EncodeResponseHeader(const ResponseHeader& header) {
  std::string out;
  PutU32(out, header.code);
  PutU32(out, header.error_length);
  PutU64(out, header.length);
  return out;
}

ResponseHeader DecodeResponseHeader(absl::string_view bytes) {
  return {GetU32(bytes, 0), GetU32(bytes, 4), GetU64(bytes, 8)};
}

absl::Status ReadExactly(const DataPlaneSocket& socket, absl::Span<char> out,
                         absl::Time deadline, absl::string_view peer) {
  const int fd = socket.fd;
  if (socket.ssl != nullptr) {
    return SslReadExactly(socket.ssl, fd, out, deadline, peer);
  }
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = read(fd, out.data() + done, out.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return absl::UnavailableError(
          absl::StrCat("TCP data plane to ", peer, ": connection closed"));
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat(
          "TCP data plane to ", peer, ": read failed: ", std::strerror(errno)));
    }
    if (absl::Status s = AwaitSocket(fd, POLLIN, deadline, peer); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status WriteAll(const DataPlaneSocket& socket, std::vector<iovec> parts,
                      absl::Time deadline, absl::string_view peer) {
  const int fd = socket.fd;
  if (socket.ssl != nullptr) {
    return SslWriteAll(socket.ssl, fd, parts, deadline, peer);
  }
  size_t first = 0;
  while (first < parts.size()) {
    const int count =
        static_cast<int>(std::min<size_t>(parts.size() - first, IOV_MAX));
    // sendmsg rather than writev for MSG_NOSIGNAL: a peer that went away
    // must be an error here, not a SIGPIPE that ends the process.
    msghdr message{};
    message.msg_iov = &parts[first];
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = sendmsg(fd, &message, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return absl::UnavailableError(
            absl::StrCat("TCP data plane to ", peer,
                         ": write failed: ", std::strerror(errno)));
      }
      if (absl::Status s = AwaitSocket(fd, POLLOUT, deadline, peer); !s.ok()) {
        return s;
      }
      continue;
    }
    size_t written = static_cast<size_t>(n);
    while (first < parts.size() && written >= parts[first].iov_len) {
      written -= parts[first].iov_len;
      ++first;
    }
    if (first < parts.size()) {
      parts[first].iov_base =
          static_cast<char*>(parts[first].iov_base) + written;
      parts[first].iov_len -= written;
    }
  }
  return absl::OkStatus();
}

std::vector<iovec> MessageParts(const grpc::ByteBuffer& message,
                                std::vector<grpc::Slice>& slices) {
  slices.clear();
  std::vector<iovec> parts;
  if (!message.Valid() || !message.Dump(&slices).ok()) return parts;
  for (const grpc::Slice& slice : slices) {
    if (slice.size() == 0) continue;
    parts.push_back({const_cast<uint8_t*>(slice.begin()), slice.size()});
  }
  return parts;
}

absl::StatusOr<grpc::ByteBuffer> ReadMessage(const DataPlaneSocket& socket,
                                             uint64_t length,
                                             absl::Time deadline,
                                             absl::string_view peer) {
  constexpr uint64_t kMaxSlice = 1 << 20;
  std::vector<grpc::Slice> slices;
  for (uint64_t left = length; left > 0;) {
    const size_t size = static_cast<size_t>(std::min(left, kMaxSlice));
    grpc::Slice slice(grpc_slice_malloc(size), grpc::Slice::STEAL_REF);
    char* data = reinterpret_cast<char*>(const_cast<uint8_t*>(slice.begin()));
    if (absl::Status s =
            ReadExactly(socket, absl::MakeSpan(data, size), deadline, peer);
        !s.ok()) {
      return s;
    }
    slices.push_back(std::move(slice));
    left -= size;
  }
  if (slices.empty()) slices.emplace_back();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace distrt::rpc
