#include "rpc/ps_grpc_server.h"

#include <array>
#include <atomic>
#include <functional>
#include <random>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/bundle_message.h"
#include "rpc/data_plane_server.h"
#include "rpc/data_plane_tls.h"
#include "rpc/grpc_server_start.h"
#include "rpc/grpc_status.h"
#include "rpc/pooled_tensor.h"
#include "rpc/ps_methods.h"
#include "rpc/ps_request_handler.h"
#include "rpc/ps_server_metrics.h"
#include "rpc/transport_security.h"
#include "rpc/wire_message.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/util/buffer_pool.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

uint64_t NewIncarnation() {
  std::random_device device;
  const uint64_t high = device();
  return (high << 32) ^ device();
}

int ClampToInt(int64_t bytes) {
  return static_cast<int>(std::min<int64_t>(bytes, INT32_MAX));
}

}  // namespace

// The synchronous gRPC API for the admin RPCs, which may block (on disk for
// checkpoints) as its thread pool is made for; the tensor RPCs use the
// callback API (ServeTensorMethods).
class PsGrpcServer::Impl final : public ps::ParameterServer::Service {
 public:
  explicit Impl(const Options& options)
      : options_(options),
        incarnation_(NewIncarnation()),
        start_time_(absl::Now()),
        handler_(PsRequestHandler::Options{options.task_index,
                                           options.max_message_bytes,
                                           options.max_variable_bytes}) {
    ServeTensorMethods();
  }

  grpc::Status GetStatus(grpc::ServerContext*, const ps::GetStatusRequest*,
                         ps::GetStatusResponse* response) override {
    Count(kGetStatus, absl::OkStatus());
    response->set_task_index(options_.task_index);
    response->set_incarnation(incarnation_);
    response->set_uptime_ms(
        absl::ToInt64Milliseconds(absl::Now() - start_time_));
    handler_.FillHoldings(response);
    for (int m = 0; m < kNumPsMethods; ++m) {
      const int64_t n = requests_[m].load(std::memory_order_relaxed);
      if (n > 0) (*response->mutable_requests())[kPsMethodNames[m]] = n;
    }
    response->set_failed_requests(failed_.load(std::memory_order_relaxed));
    response->set_data_plane_port(data_plane_port());
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext* context,
                        const ps::ShutdownRequest* request,
                        ps::ShutdownResponse*) override {
    RequestShutdown(request->reason().empty()
                        ? absl::StrCat("Shutdown RPC from ", context->peer())
                        : request->reason());
    return Count(kShutdown, absl::OkStatus());
  }

  grpc::Status CreateVariable(grpc::ServerContext*,
                              const ps::CreateVariableRequest* request,
                              ps::VariableInfo* response) override {
    return Timed(kCreateVariable,
                 [&] { return handler_.CreateVariable(*request, response); });
  }
  grpc::Status LookupVariable(grpc::ServerContext*,
                              const ps::LookupVariableRequest* request,
                              ps::VariableInfo* response) override {
    return Timed(kLookupVariable,
                 [&] { return handler_.LookupVariable(*request, response); });
  }
  grpc::Status ListVariables(grpc::ServerContext*,
                             const ps::ListVariablesRequest*,
                             ps::ListVariablesResponse* response) override {
    handler_.ListVariables(response);
    return Count(kListVariables, absl::OkStatus());
  }
  grpc::Status CreateHashTable(grpc::ServerContext*,
                               const ps::CreateHashTableRequest* request,
                               ps::HashTableInfo* response) override {
    return Timed(kCreateHashTable,
                 [&] { return handler_.CreateHashTable(*request, response); });
  }
  grpc::Status Save(grpc::ServerContext*, const ps::SaveRequest* request,
                    ps::SaveResponse* response) override {
    return Timed(kSave, [&] { return handler_.Save(*request, response); });
  }
  grpc::Status CommitCheckpoint(
      grpc::ServerContext*, const ps::CommitCheckpointRequest* request,
      ps::CommitCheckpointResponse* response) override {
    return Timed(kCommitCheckpoint,
                 [&] { return handler_.CommitCheckpoint(*request, response); });
  }
  grpc::Status Restore(grpc::ServerContext*, const ps::RestoreRequest* request,
                       ps::RestoreResponse* response) override {
    return Timed(kRestore,
                 [&] { return handler_.Restore(*request, response); });
  }

  void RequestShutdown(absl::string_view reason) {
    absl::MutexLock lock(&mu_);
    if (!shutdown_requested_.HasBeenNotified()) {
      shutdown_reason_ = std::string(reason);
      shutdown_requested_.Notify();
    }
  }

  // See Options.restore_dir.
  absl::Status TakeBackShard() {
    if (options_.restore_dir.empty()) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::vector<std::string> index,
                     ReadCheckpointIndex(options_.restore_dir));
    if (index.empty()) return absl::OkStatus();
    absl::StatusOr<RestoreInfo> restored = handler_.RecreateShard(
        options_.restore_dir, options_.task_index, options_.num_ps_tasks);
    if (!restored.ok()) {
      return absl::Status(
          restored.status().code(),
          absl::StrCat("cannot take back this task's shard of the latest "
                       "checkpoint in ",
                       options_.restore_dir, ": ",
                       restored.status().message()));
    }
    restored_ = *std::move(restored);
    return absl::OkStatus();
  }

  const std::optional<RestoreInfo>& restored() const { return restored_; }

  // Registers this task's metrics in options_.metrics, when given.
  absl::Status RegisterMetrics() {
    if (options_.metrics == nullptr) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<PsServerMetrics>> metrics =
        PsServerMetrics::Create(
            options_.metrics, kPsMethodNames,
            [this](ps::GetStatusResponse* status) {
              handler_.FillHoldings(status);
            },
            restored_.has_value());
    RETURN_IF_ERROR(metrics.status());
    metrics_ = *std::move(metrics);
    return absl::OkStatus();
  }

  absl::Status Listen() {
    // The data plane first: GetStatus tells clients its port, and a client
    // that asked before it existed would send its tensors over gRPC for
    // good (data_plane_ is also read by GetStatus without a lock, so it is
    // set before any handler can run).
    if (options_.data_plane) RETURN_IF_ERROR(ListenForTheDataPlane());
    absl::StatusOr<StartedGrpcServer> started = StartGrpcServer(
        options_.listen_address, this, options_.security.get(),
        [&](grpc::ServerBuilder& builder) {
          builder.SetMaxReceiveMessageSize(
              ClampToInt(options_.max_message_bytes));
          // Responses are bounded by PsRequestHandler before they are
          // built; the transport adds a little framing.
          builder.SetMaxSendMessageSize(
              ClampToInt(options_.max_message_bytes + (1 << 20)));
        });
    if (!started.ok()) {
      if (data_plane_ != nullptr) {
        data_plane_->Stop();
        data_plane_.reset();
      }
      return started.status();
    }
    server_ = std::move(started->server);
    port_ = started->port;
    return absl::OkStatus();
  }

  // Starts the TCP data plane beside the gRPC server (Options::data_plane).
  absl::Status ListenForTheDataPlane() {
    DataPlaneServer::Options options;
    if (options_.security != nullptr) {
      // The job's TLS and token, as on gRPC.
      ASSIGN_OR_RETURN(options.tls, DataPlaneTls::ForJob(*options_.security));
    }
    // The host of listen_address ("host:port", "[v6]:port").
    const size_t colon = options_.listen_address.rfind(':');
    options.host = options_.listen_address.substr(0, colon);
    if (options.host.size() >= 2 && options.host.front() == '[' &&
        options.host.back() == ']') {
      options.host = options.host.substr(1, options.host.size() - 2);
    }
    options.port = options_.data_plane_port;
    options.max_message_bytes = options_.max_message_bytes;
    options.task_index = options_.task_index;
    options.incarnation = incarnation_;
    options.stop_grace = options_.stop_grace;
    options.log = options_.log;
    ASSIGN_OR_RETURN(
        data_plane_,
        DataPlaneServer::Start(options, [this](int method, grpc::ByteBuffer* in,
                                               grpc::ByteBuffer* out) {
          return ServeOverTheDataPlane(method, in, out);
        }));
    return absl::OkStatus();
  }

  int data_plane_port() const {
    return data_plane_ != nullptr ? data_plane_->port() : 0;
  }

  void Stop() {
    absl::MutexLock lock(&stop_mu_);
    if (data_plane_ != nullptr) data_plane_->Stop();
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
  // Set by Listen (with Options::data_plane), stopped by Stop.
  std::unique_ptr<DataPlaneServer> data_plane_;

 private:
  // The methods that carry tensors take and give message bytes
  // (rpc/wire_message.h) instead of parsed messages: dense gradients are
  // applied straight from the received slices, other tensors are decoded
  // once into pooled buffers, and pulled rows are sent from the buffer they
  // were copied into. They use gRPC's callback API, as raw-bytes unary
  // methods: the handler runs on one of gRPC's callback threads and answers
  // at once, without the synchronous "streamed unary" handler's separate
  // blocking read and write steps (a small call costs about 30 us less).
  // Clients see plain unary RPCs.
  //
  // The limit this brings: gRPC 1.51 runs callbacks on a fixed pool of
  // threads (a few per process), and a handler that waits for a variable's
  // lock holds one. Handlers never wait for another RPC, so this cannot
  // deadlock; many concurrent pushes to one variable queue behind each
  // other, as they would for its lock anyway.
  void ServeTensorMethods() {
    ServeRaw(kPullDense, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
      ps::PullDenseRequest request;
      RETURN_IF_ERROR(DecodeWithTensors(in, "PullDense request", &request, {}));
      return Respond<ps::PullDenseResponse>(
          out, [&](PsRequestHandler::ResponseTensor values) {
            return handler_.PullDense(request, values);
          });
    });
    ServeRaw(kPushDense, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
      ps::PushDenseRequest request;
      // The gradient is applied from the received slices as it is read.
      IncomingTensor values(3);
      values.in_place = true;
      RETURN_IF_ERROR(
          DecodeWithTensors(in, "PushDense request", &request, {&values}));
      ps::PushDenseResponse response;
      RETURN_IF_ERROR(handler_.PushDense(request, values.view(), &response));
      *out = EncodeWithTensors(response, {});
      return absl::OkStatus();
    });
    ServeRaw(kPullSparse, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
      return PullRowsById("PullSparse request", in, out,
                          &PsRequestHandler::PullSparse);
    });
    ServeRaw(kPullHash, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
      return PullRowsById("PullHash request", in, out,
                          &PsRequestHandler::PullHash);
    });
    ServeRaw(kPushSparse, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
      return PushRowsById("PushSparse request", in, out,
                          &PsRequestHandler::PushSparse);
    });
    ServeRaw(kPushHash, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
      return PushRowsById("PushHash request", in, out,
                          &PsRequestHandler::PushHash);
    });
    // The batches' tensors are small and travel inside the messages, but
    // as raw methods they too are answered on the callback thread, without
    // a hand-off to the synchronous API's pool, and go in bundles.
    ServeRaw(
        kPullDenseBatch, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
          ps::PullDenseBatchRequest request;
          RETURN_IF_ERROR(
              DecodeWithTensors(in, "PullDenseBatch request", &request, {}));
          ps::PullDenseBatchResponse response;
          RETURN_IF_ERROR(handler_.PullDenseBatch(request, &response));
          *out = EncodeWithTensors(response, {});
          return absl::OkStatus();
        });
    ServeRaw(
        kPushDenseBatch, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
          ps::PushDenseBatchRequest request;
          RETURN_IF_ERROR(
              DecodeWithTensors(in, "PushDenseBatch request", &request, {}));
          RETURN_IF_ERROR(handler_.PushDenseBatch(request));
          *out = EncodeWithTensors(ps::PushDenseBatchResponse(), {});
          return absl::OkStatus();
        });
    ServeRaw(kBundle, [this](grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
      return ServeBundle(in, out);
    });
  }

  // Serves each part of a Bundle as its method would be served alone
  // (counted and recorded as that method too, so the Bundle's own count,
  // bytes and time include its parts'), in order; a part's error is its
  // answer's, and the others go on.
  absl::Status ServeBundle(grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
    ASSIGN_OR_RETURN(std::vector<WirePart> parts,
                     DecodeBundle(in, "Bundle request"));
    std::vector<WirePart> answers(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      WirePart& part = parts[i];
      WirePart& answer = answers[i];
      int method = 0;
      while (method < kNumPsMethods &&
             (kPsMethodNames[method] != part.method || !raw_[method])) {
        ++method;
      }
      absl::Status status;
      if (method == kNumPsMethods || method == kBundle) {
        std::vector<std::string> carried;
        for (int m = 0; m < kNumPsMethods; ++m) {
          if (raw_[m] && m != kBundle) carried.push_back(kPsMethodNames[m]);
        }
        status = absl::InvalidArgumentError(
            absl::StrCat("Bundle part ", i, ": \"", part.method,
                         "\" is not one of the RPCs a bundle carries (",
                         absl::StrJoin(carried, ", "), ")"));
      } else {
        status = ServeCounted(static_cast<PsMethod>(method), &part.message,
                              &answer.message);
      }
      answer.code = static_cast<int>(status.code());
      answer.error = std::string(status.message());
      if (!status.ok()) answer.message.Clear();
    }
    *out = EncodeBundle(answers);
    return absl::OkStatus();
  }

  // A request that came over the TCP data plane: served as the same RPC
  // over gRPC would be.
  absl::Status ServeOverTheDataPlane(int method, grpc::ByteBuffer* in,
                                     grpc::ByteBuffer* out) {
    if (method < 0 || method >= kNumPsMethods || !raw_[method]) {
      std::vector<std::string> carried;
      for (int m = 0; m < kNumPsMethods; ++m) {
        if (raw_[m]) carried.push_back(kPsMethodNames[m]);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "the TCP data plane carries ", absl::StrJoin(carried, ", "),
          "; not method number ", method));
    }
    return ServeCounted(static_cast<PsMethod>(method), in, out);
  }

  // Runs method's `serve` on `request`, and counts and records it.
  absl::Status ServeCounted(PsMethod method, grpc::ByteBuffer* request,
                            grpc::ByteBuffer* response) {
    const size_t request_bytes = request->Length();
    const absl::Time start = absl::Now();
    const absl::Status status = raw_[method](request, response);
    if (metrics_ != nullptr) {
      metrics_->Record(method, absl::Now() - start, status.code(),
                       request_bytes, status.ok() ? response->Length() : 0);
    }
    Count(method, status);
    return status;
  }

  // How a raw method answers: request bytes in, response bytes out.
  using RawServe =
      std::function<absl::Status(grpc::ByteBuffer* in, grpc::ByteBuffer* out)>;

  // Serves `method` with `serve(request bytes, response bytes)`, alone and
  // as a part of a Bundle.
  void ServeRaw(PsMethod method, RawServe serve) {
    raw_[method] = std::move(serve);
    MarkMethodRawCallback(
        method, new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer,
                                                         grpc::ByteBuffer>(
                    [this, method](grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) {
                      // A copy of a ByteBuffer shares its slices; decoding
                      // needs a mutable one.
                      grpc::ByteBuffer in(*request);
                      grpc::ServerUnaryReactor* reactor =
                          context->DefaultReactor();
                      reactor->Finish(
                          ToGrpcStatus(ServeCounted(method, &in, response)));
                      return reactor;
                    }));
  }

  // Runs `pull(values)` with a pooled buffer for the result and encodes a
  // Response whose field 1 is that result, sent from the buffer.
  template <typename Response, typename Pull>
  absl::Status Respond(grpc::ByteBuffer* out, Pull pull) {
    BufferPool::Buffer buffer;
    ps::DataType dtype = ps::DATA_TYPE_UNSPECIFIED;
    std::vector<int64_t> shape;
    absl::Status status =
        pull([&](ps::DataType d, const std::vector<int64_t>& s,
                 int64_t bytes) -> char* {
          dtype = d;
          shape = s;
          buffer = pool_.Get(bytes);
          return buffer.data();
        });
    RETURN_IF_ERROR(status);
    auto owner = std::make_shared<BufferPool::Buffer>(std::move(buffer));
    *out = EncodeWithTensors(
        Response(), {{1, dtype, std::move(shape), owner->span(), owner}});
    return absl::OkStatus();
  }

  template <typename Pull>
  absl::Status PullRowsById(absl::string_view what, grpc::ByteBuffer* in,
                            grpc::ByteBuffer* out, Pull pull) {
    ps::PullSparseRequest request;
    PooledTensor ids(2, pool_);
    RETURN_IF_ERROR(DecodeWithTensors(in, what, &request, {&ids.tensor}));
    return Respond<ps::PullSparseResponse>(
        out, [&](PsRequestHandler::ResponseTensor values) {
          return (handler_.*pull)(request, ids.tensor.view(), values);
        });
  }

  template <typename Push>
  absl::Status PushRowsById(absl::string_view what, grpc::ByteBuffer* in,
                            grpc::ByteBuffer* out, Push push) {
    ps::PushSparseRequest request;
    PooledTensor ids(2, pool_);
    PooledTensor gradients(3, pool_);
    RETURN_IF_ERROR(DecodeWithTensors(in, what, &request,
                                      {&ids.tensor, &gradients.tensor}));
    *out = EncodeWithTensors(ps::PushSparseResponse(), {});
    return (handler_.*push)(request, ids.tensor.view(),
                            gradients.tensor.view());
  }

  // Runs `handle` (a synchronous RPC's work), then counts and records it.
  template <typename Handle>
  grpc::Status Timed(PsMethod method, Handle handle) {
    const absl::Time start = absl::Now();
    const absl::Status status = handle();
    if (metrics_ != nullptr) {
      metrics_->Record(method, absl::Now() - start, status.code(), 0, 0);
    }
    return Count(method, status);
  }

  grpc::Status Count(PsMethod method, const absl::Status& status) {
    requests_[method].fetch_add(1, std::memory_order_relaxed);
    if (!status.ok()) failed_.fetch_add(1, std::memory_order_relaxed);
    return ToGrpcStatus(status);
  }

  PsRequestHandler handler_;
  // The methods served as message bytes, by PsMethod (empty for the
  // others); set in the constructor, constant after.
  std::array<RawServe, kNumPsMethods> raw_;
  std::optional<RestoreInfo> restored_;       // set by Start, then constant
  std::unique_ptr<PsServerMetrics> metrics_;  // set by Start; may be null
  BufferPool pool_;
  std::array<std::atomic<int64_t>, kNumPsMethods> requests_{};
  std::atomic<int64_t> failed_{0};
};

absl::StatusOr<std::unique_ptr<PsGrpcServer>> PsGrpcServer::Start(
    const Options& options) {
  auto impl = std::make_unique<Impl>(options);
  // Before listening: no request may see the task half restored.
  RETURN_IF_ERROR(impl->TakeBackShard());
  RETURN_IF_ERROR(impl->RegisterMetrics());
  RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<PsGrpcServer>(new PsGrpcServer(std::move(impl)));
}

PsGrpcServer::PsGrpcServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

PsGrpcServer::~PsGrpcServer() { Stop(); }

int PsGrpcServer::port() const { return impl_->port_; }

int PsGrpcServer::data_plane_port() const { return impl_->data_plane_port(); }

uint64_t PsGrpcServer::incarnation() const { return impl_->incarnation_; }

const std::optional<RestoreInfo>& PsGrpcServer::restored() const {
  return impl_->restored();
}

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

void PsGrpcServer::Join() {
  impl_->shutdown_requested_.WaitForNotification();
  Stop();
}

}  // namespace distrt::rpc
