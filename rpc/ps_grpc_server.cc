#include "rpc/ps_grpc_server.h"

#include <random>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps_service.grpc.pb.h"

namespace distrt::rpc {
namespace {

uint64_t NewIncarnation() {
  std::random_device device;
  const uint64_t high = device();
  return (high << 32) ^ device();
}

}  // namespace

class PsGrpcServer::Impl final : public ps::ParameterServer::CallbackService {
 public:
  explicit Impl(const Options& options)
      : options_(options),
        incarnation_(NewIncarnation()),
        start_time_(absl::Now()) {}

  grpc::ServerUnaryReactor* GetStatus(
      grpc::CallbackServerContext* context, const ps::GetStatusRequest* request,
      ps::GetStatusResponse* response) override {
    response->set_task_index(options_.task_index);
    response->set_incarnation(incarnation_);
    response->set_uptime_ms(
        absl::ToInt64Milliseconds(absl::Now() - start_time_));
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Shutdown(grpc::CallbackServerContext* context,
                                     const ps::ShutdownRequest* request,
                                     ps::ShutdownResponse* response) override {
    RequestShutdown(request->reason().empty()
                        ? absl::StrCat("Shutdown RPC from ", context->peer())
                        : request->reason());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  void RequestShutdown(absl::string_view reason) {
    absl::MutexLock lock(&mu_);
    if (!shutdown_requested_.HasBeenNotified()) {
      shutdown_reason_ = std::string(reason);
      shutdown_requested_.Notify();
    }
  }

  absl::Status Listen() {
    grpc::ServerBuilder builder;
    // gRPC sets SO_REUSEPORT by default, which would let a second ps task
    // share (and silently split) a port already in use.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort(options_.listen_address,
                             grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      server_.reset();
      return absl::UnavailableError(absl::StrCat(
          "cannot listen on ", options_.listen_address,
          " (is the port in use, or the host not an address of this "
          "machine?)"));
    }
    return absl::OkStatus();
  }

  void Stop() {
    absl::MutexLock lock(&stop_mu_);
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() +
                      absl::ToChronoSeconds(options_.stop_grace));
    server_->Wait();
    server_.reset();
  }

  const Options options_;
  const uint64_t incarnation_;
  const absl::Time start_time_;
  int port_ = 0;  // set by Listen(), constant after

  absl::Notification shutdown_requested_;
  mutable absl::Mutex mu_;
  std::string shutdown_reason_ ABSL_GUARDED_BY(mu_);

  absl::Mutex stop_mu_;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(stop_mu_);
};

absl::StatusOr<std::unique_ptr<PsGrpcServer>> PsGrpcServer::Start(
    const Options& options) {
  auto impl = std::make_unique<Impl>(options);
  if (absl::Status s = impl->Listen(); !s.ok()) return s;
  return std::unique_ptr<PsGrpcServer>(new PsGrpcServer(std::move(impl)));
}

PsGrpcServer::PsGrpcServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

PsGrpcServer::~PsGrpcServer() { Stop(); }

int PsGrpcServer::port() const { return impl_->port_; }

uint64_t PsGrpcServer::incarnation() const { return impl_->incarnation_; }

void PsGrpcServer::RequestShutdown(absl::string_view reason) {
  impl_->RequestShutdown(reason);
}

bool PsGrpcServer::WaitForShutdownRequest(absl::Duration timeout) {
  return impl_->shutdown_requested_.WaitForNotificationWithTimeout(timeout);
}

std::string PsGrpcServer::shutdown_reason() const {
  absl::MutexLock lock(&impl_->mu_);
  return impl_->shutdown_reason_;
}

void PsGrpcServer::Stop() { impl_->Stop(); }

}  // namespace distrt::rpc
