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

// Waits until `fd` is ready for `events` or the deadline passes.
absl::Status Await(int fd, short events, absl::Time deadline,
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

}  // namespace

std::string EncodeClientHello() {
  std::string out(kDataPlaneMagic, sizeof(kDataPlaneMagic));
  PutU32(out, kDataPlaneVersion);
  return out;
}

absl::Status CheckClientHello(absl::string_view bytes) {
  return CheckHello(bytes, kClientHelloBytes, "client");
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
  return out;
}

absl::StatusOr<ServerHello> DecodeServerHello(absl::string_view bytes) {
  if (absl::Status s = CheckHello(bytes, kServerHelloBytes, "server");
      !s.ok()) {
    return s;
  }
  ServerHello hello;
  hello.max_message_bytes = GetU64(bytes, 12);
  hello.task_index = GetU32(bytes, 20);
  hello.incarnation = GetU64(bytes, 24);
  hello.methods_fingerprint = GetU64(bytes, 32);
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

absl::Status ReadExactly(int fd, absl::Span<char> out, absl::Time deadline,
                         absl::string_view peer) {
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
    if (absl::Status s = Await(fd, POLLIN, deadline, peer); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, std::vector<iovec> parts, absl::Time deadline,
                      absl::string_view peer) {
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
      if (absl::Status s = Await(fd, POLLOUT, deadline, peer); !s.ok()) {
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

absl::StatusOr<grpc::ByteBuffer> ReadMessage(int fd, uint64_t length,
                                             absl::Time deadline,
                                             absl::string_view peer) {
  constexpr uint64_t kMaxSlice = 1 << 20;
  std::vector<grpc::Slice> slices;
  for (uint64_t left = length; left > 0;) {
    const size_t size = static_cast<size_t>(std::min(left, kMaxSlice));
    grpc::Slice slice(grpc_slice_malloc(size), grpc::Slice::STEAL_REF);
    char* data = reinterpret_cast<char*>(const_cast<uint8_t*>(slice.begin()));
    if (absl::Status s =
            ReadExactly(fd, absl::MakeSpan(data, size), deadline, peer);
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
