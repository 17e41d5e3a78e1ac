#include "bench/grpc_bytebuffer_baseline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/slice.h"
#include "rpc/grpc_status.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

// A pull request is the byte count, 8 bytes little-endian.
constexpr size_t kPullRequestBytes = 8;

void EncodeCount(uint64_t n, unsigned char out[kPullRequestBytes]) {
  for (size_t i = 0; i < kPullRequestBytes; ++i) {
    out[i] = static_cast<unsigned char>(n >> (8 * i));
  }
}

uint64_t DecodeCount(const unsigned char in[kPullRequestBytes]) {
  uint64_t n = 0;
  for (size_t i = 0; i < kPullRequestBytes; ++i) {
    n |= static_cast<uint64_t>(in[i]) << (8 * i);
  }
  return n;
}

// Copies the (at most `size`) bytes of `buffer` to `out`; false when its
// slices cannot be read.
bool CopyOut(const grpc::ByteBuffer& buffer, char* out, size_t size) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return false;
  size_t at = 0;
  for (const grpc::Slice& slice : slices) {
    const size_t n = std::min(slice.size(), size - at);
    std::memcpy(out + at, slice.begin(), n);
    at += n;
  }
  return true;
}

}  // namespace

// Both methods in one generic service: the callback API hands every call to
// CreateReactor with its method name.
class GrpcBaselineServer::Service final : public grpc::CallbackGenericService {
 public:
  // `pull_buffer` (borrowed) holds `max_pull_bytes` bytes.
  Service(const char* pull_buffer, int64_t max_pull_bytes)
      : pull_buffer_(pull_buffer), max_pull_bytes_(max_pull_bytes) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override {
    return new Reactor(this, context->method());
  }

 private:
  // One unary call: read the request, answer it, finish. Deletes itself
  // when gRPC is done with it.
  class Reactor final : public grpc::ServerGenericBidiReactor {
   public:
    Reactor(const Service* service, std::string method)
        : service_(service), method_(std::move(method)) {
      StartRead(&request_);
    }

    void OnReadDone(bool ok) override {
      if (!ok) {
        // The client half-closed without a message, or the call was
        // cancelled: there is nothing to answer.
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "no request message"));
        return;
      }
      grpc::Status status = service_->Handle(method_, request_, &response_);
      if (!status.ok()) {
        Finish(status);
        return;
      }
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
    }

    void OnDone() override { delete this; }

   private:
    const Service* const service_;
    const std::string method_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
  };

  grpc::Status Handle(const std::string& method,
                      const grpc::ByteBuffer& request,
                      grpc::ByteBuffer* response) const {
    if (method == kGrpcBaselinePushMethod) {
      // The payload stays in gRPC's slices, unread: the baseline measures
      // the transport only. The answer is a message of no bytes.
      grpc::Slice empty;
      *response = grpc::ByteBuffer(&empty, 1);
      return grpc::Status::OK;
    }
    if (method == kGrpcBaselinePullMethod) {
      unsigned char count[kPullRequestBytes];
      if (request.Length() != kPullRequestBytes ||
          !CopyOut(request, reinterpret_cast<char*>(count), sizeof(count))) {
        return grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("a pull request is ", kPullRequestBytes,
                         " bytes (the count), not ", request.Length()));
      }
      const uint64_t n = DecodeCount(count);
      if (n > static_cast<uint64_t>(max_pull_bytes_)) {
        return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                            absl::StrCat("pull of ", n,
                                         " bytes; this server answers at "
                                         "most max_pull_bytes = ",
                                         max_pull_bytes_));
      }
      // Zero-copy: a static slice refers to the buffer, which outlives the
      // server, so gRPC sends from it and never frees it.
      grpc::Slice slice(pull_buffer_, n, grpc::Slice::STATIC_SLICE);
      *response = grpc::ByteBuffer(&slice, 1);
      return grpc::Status::OK;
    }
    return grpc::Status(
        grpc::StatusCode::UNIMPLEMENTED,
        absl::StrCat("no method ", method, " (only ", kGrpcBaselinePushMethod,
                     " and ", kGrpcBaselinePullMethod, ")"));
  }

  const char* const pull_buffer_;
  const int64_t max_pull_bytes_;
};

GrpcBaselineServer::GrpcBaselineServer() = default;

absl::StatusOr<std::unique_ptr<GrpcBaselineServer>> GrpcBaselineServer::Start(
    const Options& options) {
  if (options.max_pull_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_pull_bytes is negative (", options.max_pull_bytes, ")"));
  }
  std::unique_ptr<GrpcBaselineServer> server(new GrpcBaselineServer());
  server->stop_grace_ = options.stop_grace;
  const size_t buffer_bytes =
      std::max<size_t>(1, static_cast<size_t>(options.max_pull_bytes));
  server->pull_buffer_ = std::make_unique<char[]>(buffer_bytes);
  // Written once so that its pages are mapped before any pull is timed.
  std::memset(server->pull_buffer_.get(), 0x5a, buffer_bytes);
  server->service_ = std::make_unique<Service>(server->pull_buffer_.get(),
                                               options.max_pull_bytes);

  grpc::ServerBuilder builder;
  // As every server of the project (rpc/grpc_server_start.h): never share a
  // port with another process.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Pushes of 64 MiB and more; gRPC's default limit is 4 MiB.
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  const std::string listen_address = "127.0.0.1:0";
  builder.AddListeningPort(listen_address, grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.RegisterCallbackGenericService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "the gRPC baseline server cannot listen on ", listen_address));
  }
  return server;
}

GrpcBaselineServer::~GrpcBaselineServer() {
  if (server_ == nullptr) return;
  // After the deadline gRPC cancels what is still in flight, so this and
  // Wait() return within about stop_grace.
  server_->Shutdown(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(stop_grace_));
  server_->Wait();
}

std::string GrpcBaselineServer::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

GrpcBaselineClient::GrpcBaselineClient(std::string address, Options options,
                                       std::unique_ptr<grpc::GenericStub> stub)
    : address_(std::move(address)),
      options_(std::move(options)),
      stub_(std::move(stub)) {}

GrpcBaselineClient::~GrpcBaselineClient() = default;

std::unique_ptr<GrpcBaselineClient> GrpcBaselineClient::Create(
    const std::string& address, const Options& options) {
  grpc::ChannelArguments args;
  // Pulls of 64 MiB and more; the server bounds them by max_pull_bytes.
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return std::unique_ptr<GrpcBaselineClient>(new GrpcBaselineClient(
      address, options,
      std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(
          address, grpc::InsecureChannelCredentials(), args))));
}

absl::Status GrpcBaselineClient::Call(const char* method,
                                      const grpc::ByteBuffer& request,
                                      grpc::ByteBuffer* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(options_.rpc_timeout));
  absl::Notification done;
  grpc::Status status;
  stub_->UnaryCall(&context, method, grpc::StubOptions(), &request, response,
                   [&status, &done](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
  // Bounded by the context's deadline: gRPC completes the call by then.
  done.WaitForNotification();
  return rpc::FromGrpcStatus(status, absl::StrCat(method, " to ", address_));
}

absl::Status GrpcBaselineClient::Push(absl::Span<const char> payload) {
  // Zero-copy: a static slice refers to the caller's bytes, which stay
  // unchanged until the call has completed.
  grpc::Slice slice = payload.empty()
                          ? grpc::Slice()
                          : grpc::Slice(payload.data(), payload.size(),
                                        grpc::Slice::STATIC_SLICE);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  return Call(kGrpcBaselinePushMethod, request, &response);
}

absl::Status GrpcBaselineClient::Pull(absl::Span<char> out) {
  unsigned char count[kPullRequestBytes];
  EncodeCount(out.size(), count);
  grpc::Slice slice(count, sizeof(count));
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  RETURN_IF_ERROR(Call(kGrpcBaselinePullMethod, request, &response));
  if (response.Length() != out.size() ||
      !CopyOut(response, out.data(), out.size())) {
    return absl::InternalError(
        absl::StrCat(kGrpcBaselinePullMethod, " to ", address_, ": asked for ",
                     out.size(), " bytes, got ", response.Length()));
  }
  return absl::OkStatus();
}

}  // namespace distrt::bench
