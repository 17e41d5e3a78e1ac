#include "rpc/rendezvous_server.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/rendezvous.grpc.pb.h"
#include "rpc/grpc_server_start.h"
#include "rpc/grpc_status.h"
#include "rpc/transport_security.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {

// The synchronous gRPC API, as in PsGrpcServer: Get blocks on the store
// until its keys are set, which a thread of the server's pool is made for.
class RendezvousServer::Impl final : public rendezvous::Rendezvous::Service {
 public:
  explicit Impl(const Options& options)
      : options_(options), store_(options.store) {}

  grpc::Status Set(grpc::ServerContext*, const rendezvous::SetRequest* request,
                   rendezvous::SetResponse*) override {
    return ToGrpcStatus(store_.Set(request->key(), request->value()));
  }

  grpc::Status Get(grpc::ServerContext* context,
                   const rendezvous::GetRequest* request,
                   rendezvous::GetResponse* response) override {
    // Waiting past the client's deadline would hold a thread for nobody.
    const absl::Duration until_client_gives_up =
        absl::FromChrono(context->deadline()) - absl::Now();
    const absl::Duration wait =
        std::min({absl::Milliseconds(request->timeout_ms()),
                  options_.max_get_wait, until_client_gives_up});
    const std::vector<std::string> keys(request->keys().begin(),
                                        request->keys().end());
    absl::StatusOr<std::vector<std::string>> values = store_.Get(keys, wait);
    if (!values.ok()) return ToGrpcStatus(values.status());
    for (std::string& value : *values) {
      response->add_values(std::move(value));
    }
    return grpc::Status::OK;
  }

  grpc::Status Add(grpc::ServerContext*, const rendezvous::AddRequest* request,
                   rendezvous::AddResponse* response) override {
    absl::StatusOr<int64_t> value =
        store_.Add(request->key(), request->delta());
    if (!value.ok()) return ToGrpcStatus(value.status());
    response->set_value(*value);
    return grpc::Status::OK;
  }

  absl::Status Listen() {
    absl::MutexLock lock(&stop_mu_);
    ASSIGN_OR_RETURN(StartedGrpcServer started,
                     StartGrpcServer(options_.listen_address, this,
                                     options_.security.get()));
    server_ = std::move(started.server);
    port_ = started.port;
    return absl::OkStatus();
  }

  void Stop() {
    absl::MutexLock lock(&stop_mu_);
    // Before the shutdown, which waits for the handlers: a Get waiting for
    // keys would otherwise hold it up until its timeout.
    store_.Close();
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() +
                      absl::ToChronoMilliseconds(options_.stop_grace));
    server_->Wait();
    server_.reset();
  }

  const Options options_;
  int port_ = 0;  // set by Listen(), constant after
  InMemoryKvStore store_;

  absl::Mutex stop_mu_;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(stop_mu_);
};

absl::StatusOr<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(
    const Options& options) {
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<RendezvousServer>(
      new RendezvousServer(std::move(impl)));
}

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

RendezvousServer::~RendezvousServer() { Stop(); }

int RendezvousServer::port() const { return impl_->port_; }

KvStore* RendezvousServer::store() { return &impl_->store_; }

void RendezvousServer::Stop() { impl_->Stop(); }

}  // namespace distrt::rpc
