#include "client/ps_channels.h"

#include <cassert>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/grpc_status.h"
#include "runtime/util/splitmix64.h"

namespace distrt::ps_client_internal {
namespace {

// HTTP/2 pings while requests are in flight, so that a connection whose
// ps task became unreachable (packets dropped, the host gone) fails
// within a fraction of ps_failure_timeout rather than at the request's
// deadline, which for a checkpoint's save is checkpoint_timeout: without
// them, a save meeting a partition waited that long (network_faults_test
// f). The failed request is then sent again like any other. The ps
// tasks accept pings this often (rpc/grpc_server_start.cc).
void SetKeepalive(absl::Duration ps_failure_timeout,
                  grpc::ChannelArguments& args) {
  const absl::Duration quarter = ps_failure_timeout / 4;
  const absl::Duration every =
      std::clamp(quarter, absl::Seconds(2), absl::Seconds(60));
  const absl::Duration wait =
      std::clamp(quarter, absl::Seconds(2), absl::Seconds(20));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, absl::ToInt64Milliseconds(every));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, absl::ToInt64Milliseconds(wait));
  // Idle connections need none; a long save sends no data, and gRPC
  // would otherwise stop pinging after two pings without any.
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

// Uniform in [0, limit]: "full jitter".
absl::Duration Jittered(absl::Duration limit) {
  thread_local std::mt19937_64 random(std::random_device{}());
  return limit * std::uniform_real_distribution<double>(0, 1)(random);
}

// The call's RPC, as errors name it.
absl::string_view MethodName(const CallBase& call) {
  assert(call.method < rpc::kNumPsMethods);
  return call.method < rpc::kNumPsMethods ? rpc::PsMethodName(call.method)
                                          : "a request";
}

uint64_t RandomSeed() {
  return (uint64_t{std::random_device()()} << 32) ^ std::random_device()();
}

}  // namespace

PsChannels::PsChannels(Options options, std::vector<std::string> addresses)
    : options_(std::move(options)),
      addresses_(std::move(addresses)),
      request_id_seed_(RandomSeed()) {
  for (int m = 0; m < rpc::kNumPsMethods; ++m) {
    method_paths_[m] =
        absl::StrCat("/", ps::ParameterServer::service_full_name(), "/",
                     rpc::PsMethodName(static_cast<rpc::PsMethod>(m)));
  }
  for (const std::string& address : addresses_) {
    std::vector<std::unique_ptr<grpc::GenericStub>> stripes;
    for (int stripe = 0; stripe < options_.connections_per_task; ++stripe) {
      grpc::ChannelArguments args;
      // Responses are bounded by the servers' own limit.
      args.SetMaxReceiveMessageSize(-1);
      // A TCP connection of its own for each stripe: channels with the
      // same target and arguments would share one subchannel (and so one
      // connection) through gRPC's global pool. A pool per channel and an
      // argument that differs per stripe each prevent that.
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      // gRPC's reconnect backoff grows to 2 minutes by default: a ps task
      // that restarted would go unnoticed that long.
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
      args.SetInt("distrt.stripe", stripe);
      SetKeepalive(options_.ps_failure_timeout, args);
      std::shared_ptr<grpc::Channel> channel =
          options_.security != nullptr
              ? options_.security->NewChannel(address, args)
              : grpc::CreateCustomChannel(
                    address, grpc::InsecureChannelCredentials(), args);
      if (stripe == 0) stubs_.push_back(ps::ParameterServer::NewStub(channel));
      stripes.push_back(std::make_unique<grpc::GenericStub>(channel));
    }
    generic_stubs_.push_back(std::move(stripes));
  }
}

std::string PsChannels::TaskName(int task) const {
  return PsTaskName(task, addresses_[task]);
}

uint64_t PsChannels::NewRequestId() {
  for (;;) {
    const uint64_t id =
        SplitMix64(request_id_seed_ + next_request_.fetch_add(1));
    if (id != 0) return id;
  }
}

absl::Duration PsChannels::AttemptTimeout() const {
  return CapAtDeadline(
      std::min(options_.rpc_timeout, options_.ps_failure_timeout));
}

absl::Duration PsChannels::CapAtDeadline(absl::Duration timeout) const {
  return std::clamp(options_.deadline - absl::Now(), absl::ZeroDuration(),
                    timeout);
}

bool PsChannels::Retryable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

absl::Status PsChannels::SendWithRetries(
    std::vector<CallBase*> send, bool retry,
    absl::FunctionRef<void(const std::vector<CallBase*>&)> send_round) {
  const absl::Time start = absl::Now();
  const absl::Time give_up =
      std::min(start + options_.ps_failure_timeout, options_.deadline);
  absl::Duration backoff = options_.initial_retry_backoff;
  for (;;) {
    send_round(send);
    if (!retry) return absl::OkStatus();
    std::vector<CallBase*> failed;
    for (CallBase* call : send) {
      if (Retryable(call->status)) failed.push_back(call);
    }
    if (failed.empty()) return absl::OkStatus();
    const CallBase& first = *failed.front();
    const absl::Time now = absl::Now();
    if (now >= give_up) {
      return absl::UnavailableError(
          absl::StrCat(TaskName(first.ps_task), " did not answer ",
                       MethodName(first), first.about, " for ",
                       absl::FormatDuration(absl::Trunc(
                           give_up - start, absl::Milliseconds(100))),
                       " (", options_.timeout_flag,
                       "); last error: ", DescribeWithEarlier(first)));
    }
    LogRetry(first, give_up - now);
    absl::SleepFor(std::min(give_up - now, Jittered(backoff)));
    backoff = std::min(options_.max_retry_backoff, backoff * 2);
    for (CallBase* call : failed) {
      if (call->status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        call->earlier_failure = call->status;
      }
      call->status = grpc::Status();
    }
    send = std::move(failed);
  }
}

std::string PsChannels::DescribeWithEarlier(const CallBase& call) {
  std::string text = Describe(call.status);
  if (call.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      !call.earlier_failure.ok()) {
    absl::StrAppend(
        &text, " (an earlier attempt: ", Describe(call.earlier_failure), ")");
  }
  return text;
}

std::string PsChannels::Describe(const grpc::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(
                          static_cast<absl::StatusCode>(status.error_code())),
                      ": ", status.error_message());
}

void PsChannels::LogRetry(const CallBase& call, absl::Duration left) {
  {
    absl::MutexLock lock(&log_mu_);
    const absl::Time now = absl::Now();
    if (now - last_retry_log_ < absl::Seconds(5)) return;
    last_retry_log_ = now;
  }
  options_.log(absl::StrCat(
      "warning: ", MethodName(call), " to ", TaskName(call.ps_task),
      " failed (", Describe(call.status), "); retrying for up to ",
      absl::FormatDuration(absl::Trunc(left, absl::Seconds(1))), " (",
      options_.timeout_flag, ")"));
}

absl::Status PsChannels::CallError(const CallBase& call) const {
  if (call.status.ok()) return absl::OkStatus();
  absl::Status error = rpc::FromGrpcStatus(
      call.status, absl::StrCat(MethodName(call), call.about, " to ",
                                TaskName(call.ps_task)));
  if (call.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      !call.earlier_failure.ok()) {
    error = absl::Status(error.code(),
                         absl::StrCat(error.message(), " (an earlier attempt: ",
                                      Describe(call.earlier_failure), ")"));
  }
  return error;
}

}  // namespace distrt::ps_client_internal
