#include "client/ps_transport.h"

#include <cassert>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/time/clock.h"
#include "client/request_window.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/bundle_message.h"
#include "rpc/grpc_status.h"
#include "runtime/util/status_macros.h"

namespace distrt::ps_client_internal {
namespace {

// A Bundle request carrying `parts`. The parts' methods go by name: the
// Bundle message names them so (rpc/bundle_message.h).
grpc::ByteBuffer EncodeBundleRequest(const std::vector<CallBase*>& parts) {
  std::vector<rpc::WirePart> request(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    request[i].method = rpc::PsMethodName(parts[i]->method);
    request[i].message = parts[i]->wire_request;  // shares its slices
  }
  return rpc::EncodeBundle(request);
}

// The window that `units` (each calls to one ps task) go out through.
RequestWindow WindowFor(const std::vector<std::vector<CallBase*>>& units,
                        int num_tasks, int max_in_flight, int max_per_task) {
  std::vector<int> task_of(units.size());
  for (size_t i = 0; i < units.size(); ++i) task_of[i] = units[i][0]->ps_task;
  return RequestWindow(task_of, num_tasks, max_in_flight, max_per_task);
}

std::unique_ptr<PsDataPlaneClient> MakeDataPlaneClient(
    const PsTransport::Options& options, const PsChannels& channels) {
  if (!options.data_plane) return nullptr;
  PsDataPlaneClient::Options data_plane;
  for (int task = 0; task < channels.num_tasks(); ++task) {
    data_plane.addresses.push_back(channels.address(task));
  }
  data_plane.tls = options.data_plane_tls;
  data_plane.max_requests_in_flight = options.max_requests_in_flight;
  data_plane.max_requests_in_flight_per_task =
      options.max_requests_in_flight_per_task;
  data_plane.log = channels.options().log;
  return std::make_unique<PsDataPlaneClient>(std::move(data_plane));
}

}  // namespace

PsTransport::PsTransport(const Options& options, PsChannels* channels,
                         const PsRequestPlanner* planner)
    : options_(options),
      channels_(channels),
      planner_(planner),
      data_plane_(MakeDataPlaneClient(options, *channels)),
      serves_no_bundles_(
          std::make_unique<std::atomic<bool>[]>(channels->num_tasks())) {}

void PsTransport::LearnDataPlane(int task, int port, uint64_t incarnation) {
  if (data_plane_ != nullptr) data_plane_->Learn(task, port, incarnation);
}

absl::Status PsTransport::RunWireCalls(std::vector<CallBase*> all,
                                       Decode decode, bool bundle) {
  if (all.empty()) return absl::OkStatus();
  std::vector<int> calls_per_task(channels_->num_tasks(), 0);
  for (CallBase* c : all) {
    assert(c->method != rpc::kNumPsMethods);
    // Round-robin over the task's connections.
    c->stripe = calls_per_task[c->ps_task]++ %
                channels_->options().connections_per_task;
  }
  RETURN_IF_ERROR(channels_->SendWithRetries(
      all, /*retry=*/true, [&](const std::vector<CallBase*>& round) {
        SendWireRound(round, decode, bundle);
      }));
  for (const CallBase* call : all) {
    RETURN_IF_ERROR(channels_->CallError(*call));
  }
  for (const CallBase* call : all) {
    if (!call->decoded.ok()) return call->decoded;
  }
  return absl::OkStatus();
}

void PsTransport::SendWireRound(const std::vector<CallBase*>& round,
                                Decode decode, bool bundle) {
  for (CallBase* c : round) {
    c->decoded = absl::OkStatus();
    c->wire_response.Clear();
  }
  std::vector<std::vector<CallBase*>> units;
  if (bundle) {
    units = planner_->BundleUnits(round, [this](int task) {
      return !serves_no_bundles_[task].load(std::memory_order_relaxed);
    });
  } else {
    for (CallBase* c : round) units.push_back({c});
  }
  // Units to tasks with a data plane go there, from this thread, while
  // the others go over gRPC.
  std::vector<std::vector<CallBase*>> over_tcp;
  if (data_plane_ != nullptr) {
    std::vector<std::vector<CallBase*>> over_grpc;
    for (std::vector<CallBase*>& unit : units) {
      (OverDataPlane(unit[0]->ps_task) ? over_tcp : over_grpc)
          .push_back(std::move(unit));
    }
    units = std::move(over_grpc);
  }
  // The Bundle calls' own messages, by unit (null for single calls).
  std::vector<std::unique_ptr<BundleCall>> bundles(units.size());
  absl::BlockingCounter pending(units.size());
  const auto deadline = std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(channels_->AttemptTimeout());
  RequestWindow window =
      WindowFor(units, channels_->num_tasks(), options_.max_requests_in_flight,
                options_.max_requests_in_flight_per_task);
  std::function<void(size_t)> start = [&](size_t index) {
    // Each answer starts the unit that takes its place in the window.
    const auto ended = [&window, &start, &pending, index] {
      if (std::optional<size_t> next = window.End(index)) start(*next);
      pending.DecrementCount();
    };
    if (units[index].size() > 1) {
      bundles[index] = std::make_unique<BundleCall>();
      SendBundle(units[index], *bundles[index], deadline, decode, ended);
      return;
    }
    CallBase* c = units[index][0];
    channels_->generic_stub(c->ps_task, c->stripe)
        ->UnaryCall(c->NewAttempt(deadline), channels_->MethodPath(c->method),
                    grpc::StubOptions(), &c->wire_request, &c->wire_response,
                    [c, decode, ended](grpc::Status status) {
                      c->status = std::move(status);
                      if (c->status.ok()) c->decoded = decode(*c);
                      ended();
                    });
  };
  for (size_t index : window.Open()) start(index);
  if (!over_tcp.empty()) SendOverDataPlanes(over_tcp, decode);
  pending.Wait();
  assert(window.AllStarted());
}

bool PsTransport::OverDataPlane(int task) {
  if (data_plane_->Known(task)) return true;
  if (!data_plane_->TakeTurnToAsk(task)) return false;
  // Asks `task` for its data plane (GetStatus) and takes what it says.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(std::min(
                           channels_->AttemptTimeout(), absl::Seconds(2))));
  ps::GetStatusResponse status;
  if (channels_->stub(task)
          ->GetStatus(&context, ps::GetStatusRequest(), &status)
          .ok()) {
    LearnDataPlane(task, status.data_plane_port(), status.incarnation());
  }
  return data_plane_->Known(task);
}

void PsTransport::SendOverDataPlanes(
    const std::vector<std::vector<CallBase*>>& units, Decode decode) {
  const absl::Time deadline = absl::Now() + channels_->AttemptTimeout();
  // The Bundle calls' own messages, by unit (null for single calls).
  std::vector<std::unique_ptr<BundleCall>> bundles(units.size());
  std::vector<PsDataPlaneClient::Request> requests(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    const std::vector<CallBase*>& parts = units[i];
    PsDataPlaneClient::Request& request = requests[i];
    request.task = parts[0]->ps_task;
    if (parts.size() > 1) {
      bundles[i] = std::make_unique<BundleCall>();
      bundles[i]->request = EncodeBundleRequest(parts);
      request.method = rpc::kBundle;
      request.request = &bundles[i]->request;
      request.response = &bundles[i]->response;
    } else {
      request.method = parts[0]->method;
      request.request = &parts[0]->wire_request;
      request.response = &parts[0]->wire_response;
    }
  }
  data_plane_->SendAll(
      requests, deadline,
      [&](size_t i, const absl::Status& connection_error, grpc::Status answer) {
        const std::vector<CallBase*>& parts = units[i];
        if (!connection_error.ok()) {
          for (CallBase* c : parts) {
            c->status = rpc::ToGrpcStatus(connection_error);
          }
        } else if (bundles[i] != nullptr) {
          FinishBundle(parts, bundles[i]->response, std::move(answer), decode);
        } else {
          CallBase* c = parts[0];
          c->status = std::move(answer);
          if (c->status.ok()) c->decoded = decode(*c);
        }
      });
}

void PsTransport::SendBundle(const std::vector<CallBase*>& parts,
                             BundleCall& bundle,
                             std::chrono::system_clock::time_point deadline,
                             Decode decode, std::function<void()> done) {
  bundle.request = EncodeBundleRequest(parts);
  bundle.context = std::make_unique<grpc::ClientContext>();
  bundle.context->set_deadline(deadline);
  channels_->generic_stub(parts[0]->ps_task, 0)
      ->UnaryCall(bundle.context.get(), channels_->MethodPath(rpc::kBundle),
                  grpc::StubOptions(), &bundle.request, &bundle.response,
                  [this, parts, &bundle, decode, done](grpc::Status status) {
                    FinishBundle(parts, bundle.response, std::move(status),
                                 decode);
                    done();
                  });
}

void PsTransport::FinishBundle(const std::vector<CallBase*>& parts,
                               grpc::ByteBuffer& response, grpc::Status status,
                               Decode decode) {
  const int task = parts[0]->ps_task;
  if (status.ok()) {
    status = TakeBundleAnswers(task, response, parts, decode);
  }
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    serves_no_bundles_[task].store(true, std::memory_order_relaxed);
    status = grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        absl::StrCat(channels_->TaskName(task),
                     " does not serve Bundle (an older ps_server?); "
                     "its requests go one by one from now on"));
  }
  if (!status.ok()) {
    for (CallBase* c : parts) c->status = status;
  }
}

grpc::Status PsTransport::TakeBundleAnswers(int task,
                                            grpc::ByteBuffer& response,
                                            const std::vector<CallBase*>& parts,
                                            Decode decode) {
  absl::StatusOr<std::vector<rpc::WirePart>> answers = rpc::DecodeBundle(
      &response,
      absl::StrCat("Bundle response from ", channels_->TaskName(task)));
  if (answers.ok() && answers->size() != parts.size()) {
    answers = absl::InternalError(
        absl::StrCat(channels_->TaskName(task), " answered ", answers->size(),
                     " parts of a Bundle of ", parts.size()));
  }
  if (!answers.ok()) return rpc::ToGrpcStatus(answers.status());
  for (const rpc::WirePart& answer : *answers) {
    if (answer.code < 0 || answer.code > grpc::StatusCode::UNAUTHENTICATED) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          absl::StrCat(channels_->TaskName(task),
                                       " answered a part of "
                                       "a Bundle with status code ",
                                       answer.code));
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    CallBase* c = parts[i];
    rpc::WirePart& answer = (*answers)[i];
    c->status =
        grpc::Status(static_cast<grpc::StatusCode>(answer.code), answer.error);
    c->wire_response = std::move(answer.message);
    if (c->status.ok()) c->decoded = decode(*c);
  }
  return grpc::Status::OK;
}

}  // namespace distrt::ps_client_internal
