#include "rpc/ps_admin_client.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/grpc_status.h"

namespace distrt::rpc {
namespace {

std::unique_ptr<ps::ParameterServer::Stub> NewStub(
    const std::string& address, const TransportSecurity* security) {
  return ps::ParameterServer::NewStub(
      security != nullptr
          ? security->NewChannel(address)
          : grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(timeout));
}

}  // namespace

absl::StatusOr<PsTaskStatus> GetPsTaskStatus(
    const std::string& address, const std::string& task_name,
    absl::Duration timeout, const TransportSecurity* security) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  ps::GetStatusResponse response;
  grpc::Status status =
      NewStub(address, security)
          ->GetStatus(&context, ps::GetStatusRequest(), &response);
  if (!status.ok()) {
    return FromGrpcStatus(
        status, absl::StrCat("GetStatus to ", task_name, " (", address, ")"));
  }
  PsTaskStatus task{response.task_index(), response.incarnation(),
                    absl::Milliseconds(response.uptime_ms())};
  task.num_variables = response.num_variables();
  task.variable_bytes = response.variable_bytes();
  task.variable_rows = response.variable_rows();
  task.num_hash_tables = response.num_hash_tables();
  task.hash_table_rows = response.hash_table_rows();
  task.hash_table_bytes = response.hash_table_bytes();
  for (const auto& [method, count] : response.requests()) {
    task.requests += count;
  }
  task.failed_requests = response.failed_requests();
  for (const ps::HashTableInfo& info : response.hash_tables()) {
    task.hash_tables.push_back(PsTableStatus{
        info.spec().name(), info.num_rows(), info.bytes(), info.admitted(),
        info.evicted_by_ttl(), info.evicted_by_capacity(),
        info.unknown_lookups(), info.dropped_pushes(), info.clock()});
  }
  return task;
}

absl::Status ShutdownPsTask(const std::string& address,
                            const std::string& task_name,
                            const std::string& reason, absl::Duration timeout,
                            const TransportSecurity* security) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  ps::ShutdownRequest request;
  request.set_reason(reason);
  ps::ShutdownResponse response;
  return FromGrpcStatus(
      NewStub(address, security)->Shutdown(&context, request, &response),
      absl::StrCat("Shutdown to ", task_name, " (", address, ")"));
}

}  // namespace distrt::rpc
