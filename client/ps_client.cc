#include "client/ps_client.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "client/ps_calls.h"
#include "client/ps_channels.h"
#include "client/ps_client_impl.h"
#include "client/ps_request_planner.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/data_plane_tls.h"
#include "rpc/ps_methods.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

namespace distrt {

using ps_client_internal::AllTasks;
using ps_client_internal::Call;
using ps_client_internal::Calls;
using ps_client_internal::CallTasks;
using ps_client_internal::SizeMismatch;

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Create(
    const ClusterSpec& cluster, Options options) {
  const JobSpec* ps_job = cluster.FindJob(kPsJob);
  if (ps_job == nullptr || ps_job->tasks.empty()) {
    return absl::InvalidArgumentError(
        "the cluster has no \"ps\" job, so there are no parameter servers "
        "to talk to");
  }
  std::vector<std::string> addresses;
  for (const auto& [index, address] : ps_job->tasks) {
    if (index != static_cast<int>(addresses.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the \"ps\" job must have tasks 0 to ", ps_job->tasks.size() - 1,
          " (variables are placed by task index), but task ", addresses.size(),
          " is missing"));
    }
    addresses.push_back(address);
  }
  return Create(std::move(addresses), std::move(options));
}

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Create(
    std::vector<std::string> addresses, Options options) {
  ASSIGN_OR_RETURN(VariablePlacer placer,
                   VariablePlacer::Create(addresses.size(), options.placement));
  if (options.max_request_bytes < 1) {
    return absl::InvalidArgumentError("max_request_bytes must be positive");
  }
  if (options.data_plane_max_request_bytes < 0) {
    return absl::InvalidArgumentError(
        "data_plane_max_request_bytes must not be negative");
  }
  if (options.data_plane && options.data_plane_max_request_bytes > 0) {
    // What the planner and the transport both cut requests by.
    options.max_request_bytes = std::min(options.max_request_bytes,
                                         options.data_plane_max_request_bytes);
  }
  if (options.max_requests_in_flight < 1) {
    return absl::InvalidArgumentError(
        "max_requests_in_flight must be positive");
  }
  if (options.max_requests_in_flight_per_task < 1) {
    return absl::InvalidArgumentError(
        "max_requests_in_flight_per_task must be positive");
  }
  if (options.connections_per_task < 1) {
    return absl::InvalidArgumentError("connections_per_task must be positive");
  }
  // The data plane keeps the job's TLS and token (rpc/data_plane_tls.h).
  std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls;
  if (options.data_plane && options.security != nullptr) {
    absl::StatusOr<std::shared_ptr<const rpc::DataPlaneTls>> tls =
        rpc::DataPlaneTls::ForJob(*options.security);
    if (!tls.ok()) return absl::InvalidArgumentError(tls.status().message());
    data_plane_tls = *std::move(tls);
  }
  if (options.bundle_below_bytes < 0) {
    return absl::InvalidArgumentError(
        "bundle_below_bytes must not be negative");
  }
  if (options.batch_below_bytes < 0) {
    return absl::InvalidArgumentError("batch_below_bytes must not be negative");
  }
  if (options.ps_failure_timeout <= absl::ZeroDuration() ||
      options.rpc_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "rpc_timeout and ps_failure_timeout must be positive");
  }
  if (options.initial_retry_backoff <= absl::ZeroDuration() ||
      options.max_retry_backoff < options.initial_retry_backoff) {
    return absl::InvalidArgumentError(
        "initial_retry_backoff must be positive and at most "
        "max_retry_backoff");
  }
  return std::unique_ptr<PsClient>(new PsClient(
      std::make_unique<Impl>(std::move(options), std::move(addresses),
                             std::move(placer), std::move(data_plane_tls))));
}

PsClient::PsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PsClient::~PsClient() = default;

int PsClient::num_ps_tasks() const { return impl_->channels().num_tasks(); }

const std::string& PsClient::address(int ps_task) const {
  return impl_->channels().address(ps_task);
}

absl::Status PsClient::WaitForServers(absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  const absl::Time start = absl::Now();
  std::vector<int> waiting = AllTasks(impl_->channels().num_tasks());
  while (true) {
    auto calls =
        CallTasks<ps::GetStatusResponse>(waiting, ps::GetStatusRequest());
    for (auto& call : calls) call->wait_for_ready = true;
    const absl::Duration round =
        std::max(absl::Milliseconds(1),
                 std::min(absl::Seconds(5), give_up - absl::Now()));
    (void)impl_->channels().RunAll(
        rpc::kGetStatus, calls, round,
        [](auto* async, auto... args) { async->GetStatus(args...); },
        /*retry=*/false);
    waiting.clear();
    for (const auto& call : calls) {
      if (!call->status.ok()) {
        waiting.push_back(call->ps_task);
      } else {
        impl_->transport().LearnDataPlane(call->ps_task,
                                          call->response.data_plane_port(),
                                          call->response.incarnation());
      }
    }
    if (waiting.empty()) return absl::OkStatus();
    std::vector<std::string> names;
    for (int t : waiting) names.push_back(impl_->channels().TaskName(t));
    const std::string list = absl::StrJoin(names, ", ");
    if (absl::Now() >= give_up) {
      return absl::UnavailableError(absl::StrCat(
          "no answer from ", list, " within ", absl::FormatDuration(timeout)));
    }
    impl_->options().log(absl::StrCat(
        "waiting for ", list, " (",
        absl::FormatDuration(
            absl::Trunc(absl::Now() - start, absl::Seconds(1))),
        " so far, giving up after ", absl::FormatDuration(timeout), ")"));
  }
}

absl::StatusOr<VariablePlacement> PsClient::CreateVariable(
    const CreateVariableRequest& request) {
  const VariableSpec& spec = request.spec;
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  VariablePlacement placement;
  if (request.colocate_with.has_value()) {
    ASSIGN_OR_RETURN(VariablePlacement other,
                     LookupVariable(*request.colocate_with));
    placement.spec = spec;
    placement.parts.push_back({other.parts[0].ps_task, {0, NumRows(spec)}});
    {
      absl::MutexLock lock(&impl_->placer_mu_);
      impl_->placed_[spec.name] = placement;
    }
    return CreatePlaced(std::move(placement));
  }
  {
    absl::MutexLock lock(&impl_->placer_mu_);
    if (auto it = impl_->placed_.find(spec.name); it != impl_->placed_.end()) {
      placement = it->second;
      placement.spec = spec;  // the servers compare specs
    } else {
      ASSIGN_OR_RETURN(VariablePlacement placed,
                       impl_->placer_.Place(spec, request.partition));
      placement = placed;
      impl_->placed_[spec.name] = placement;
    }
  }
  return CreatePlaced(std::move(placement));
}

absl::StatusOr<VariablePlacement> PsClient::CreatePlaced(
    VariablePlacement placement) {
  const VariableSpec& spec = placement.spec;
  // Another client may have created it already; where it is must agree, or
  // the variable would exist twice.
  absl::StatusOr<VariablePlacement> existing = LookupVariable(spec.name);
  if (existing.ok()) {
    std::string diff = DescribeSpecDifference(existing->spec, spec);
    if (!diff.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("variable \"", spec.name,
                       "\" already exists with a different spec: ", diff));
    }
    bool same_parts = existing->parts.size() == placement.parts.size();
    for (size_t i = 0; same_parts && i < placement.parts.size(); ++i) {
      same_parts = existing->parts[i].ps_task == placement.parts[i].ps_task &&
                   existing->parts[i].rows == placement.parts[i].rows;
    }
    if (!same_parts) {
      return absl::FailedPreconditionError(absl::StrCat(
          "variable \"", spec.name,
          "\" already exists, placed differently "
          "from where this client would place it; every worker must create "
          "the same variables in the same order with the same partitioning "
          "and placement strategy"));
    }
    return *existing;
  }
  if (existing.status().code() != absl::StatusCode::kNotFound) {
    return existing.status();
  }
  Calls<ps::CreateVariableRequest, ps::VariableInfo> calls;
  for (const VariablePart& part : placement.parts) {
    auto call =
        std::make_unique<Call<ps::CreateVariableRequest, ps::VariableInfo>>(
            part.ps_task);
    VariableSpecToProto(spec, call->request.mutable_spec());
    *call->request.mutable_rows() = RowRangeToProto(part.rows);
    calls.push_back(std::move(call));
  }
  RETURN_IF_ERROR(impl_->channels().RunAll(
      rpc::kCreateVariable, calls, impl_->channels().AttemptTimeout(),
      [](auto* async, auto... args) { async->CreateVariable(args...); }));
  return placement;
}

absl::StatusOr<VariablePlacement> PsClient::LookupVariable(
    absl::string_view name) {
  ps::LookupVariableRequest request;
  request.set_name(std::string(name));
  auto calls = CallTasks<ps::VariableInfo>(
      AllTasks(impl_->channels().num_tasks()), request);
  (void)impl_->channels().RunAll(
      rpc::kLookupVariable, calls, impl_->channels().AttemptTimeout(),
      [](auto* async, auto... args) { async->LookupVariable(args...); });
  RETURN_IF_ERROR(impl_->channels().FirstError(calls,
                                               /*ignore_not_found=*/true));
  VariablePlacement placement;
  bool found = false;
  for (const auto& call : calls) {
    if (!call->status.ok()) continue;
    ASSIGN_OR_RETURN(VariableInfo info, VariableInfoFromProto(call->response));
    if (!found) {
      placement.spec = info.spec;
      found = true;
    } else if (std::string diff =
                   DescribeSpecDifference(placement.spec, info.spec);
               !diff.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("variable \"", name,
                       "\" has different specs on "
                       "different ps tasks: ",
                       diff));
    }
    placement.parts.push_back({call->ps_task, info.rows_held});
  }
  if (!found) {
    return absl::NotFoundError(
        absl::StrCat("variable \"", name, "\" is on none of the ",
                     impl_->channels().num_tasks(), " ps tasks"));
  }
  std::sort(placement.parts.begin(), placement.parts.end(),
            [](const VariablePart& a, const VariablePart& b) {
              return a.rows.begin < b.rows.begin;
            });
  RETURN_IF_ERROR(ValidatePlacement(placement));
  return placement;
}

absl::Status PsClient::List(
    std::vector<DistributedVariableInfo>* variables,
    std::vector<DistributedHashTableInfo>* hash_tables) {
  auto calls = CallTasks<ps::ListVariablesResponse>(
      AllTasks(impl_->channels().num_tasks()), ps::ListVariablesRequest());
  RETURN_IF_ERROR(impl_->channels().RunAll(
      rpc::kListVariables, calls, impl_->channels().AttemptTimeout(),
      [](auto* async, auto... args) { async->ListVariables(args...); }));
  // Each variable's parts with the task holding them, in row order.
  std::map<std::string, std::multimap<int64_t, std::pair<int, VariableInfo>>>
      parts_by_name;
  std::map<std::string, DistributedHashTableInfo> tables;
  const int n = impl_->channels().num_tasks();
  for (const auto& call : calls) {
    for (const ps::VariableInfo& proto : call->response.variables()) {
      ASSIGN_OR_RETURN(VariableInfo info, VariableInfoFromProto(proto));
      parts_by_name[info.spec.name].emplace(info.rows_held.begin,
                                            std::pair(call->ps_task, info));
    }
    for (const ps::HashTableInfo& proto : call->response.hash_tables()) {
      ASSIGN_OR_RETURN(HashEmbeddingSpec spec, HashSpecFromProto(proto.spec()));
      DistributedHashTableInfo& t = tables[spec.name];
      t.spec = spec;
      t.rows_per_task.resize(n);
      t.bytes_per_task.resize(n);
      t.rows_per_task[call->ps_task] = proto.num_rows();
      t.bytes_per_task[call->ps_task] = proto.bytes();
    }
  }
  if (variables != nullptr) {
    variables->clear();
    for (const auto& [name, parts] : parts_by_name) {
      DistributedVariableInfo& v = variables->emplace_back();
      for (const auto& [begin, task_and_info] : parts) {
        const auto& [task, info] = task_and_info;
        v.placement.spec = info.spec;
        v.placement.parts.push_back({task, info.rows_held});
        v.part_bytes.push_back(info.bytes);
        v.part_steps.push_back(info.step);
      }
    }
  }
  if (hash_tables != nullptr) {
    hash_tables->clear();
    for (auto& [name, t] : tables) hash_tables->push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::Status PsClient::PullRows(const VariablePlacement& variable,
                                RowRange rows, absl::Span<float> out) {
  return impl_->PullDense<float>(variable, rows, out);
}

absl::Status PsClient::PushRows(const VariablePlacement& variable,
                                RowRange rows, absl::Span<const float> grad) {
  return impl_->PushDense<float>(variable, rows, grad);
}

namespace {

// INVALID_ARGUMENT naming the variable unless it has `dtype`, before
// anything is sent (the ps would refuse it too, after a round trip).
absl::Status CheckDType(const VariablePlacement& variable, DType dtype,
                        absl::string_view operation) {
  if (variable.spec.dtype == dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("variable \"", variable.spec.name, "\" is ",
                   DTypeName(variable.spec.dtype), "; ", operation, " takes ",
                   DTypeName(dtype), " values"));
}

// INVALID_ARGUMENT naming `name` (a variable or hash table whose rows have
// `width` elements) unless `elements` make one row per id (`what`: the
// buffer, the gradients).
absl::Status CheckRowsById(absl::string_view name, int64_t width, size_t ids,
                           size_t elements, absl::string_view what) {
  if (static_cast<int64_t>(elements) == static_cast<int64_t>(ids) * width) {
    return absl::OkStatus();
  }
  return SizeMismatch(name, what, elements, ids * width);
}

// INVALID_ARGUMENT naming the variable unless `elements` are all of its.
absl::Status CheckWhole(const ps_client_internal::PsRequestPlanner& planner,
                        const VariablePlacement& variable, size_t elements,
                        absl::string_view what) {
  return planner.CheckRows(variable, {0, NumRows(variable.spec)}, elements,
                           what);
}

// What Read checks before anything is sent (ps_requests.h).
absl::Status CheckRead(const ps_client_internal::PsRequestPlanner& planner,
                       const ReadRequest& request) {
  for (size_t i = 0; i < request.dense.size(); ++i) {
    const DenseVariablePull& pull = request.dense[i];
    RETURN_IF_ERROR(
        planner.CheckManyItem(pull.variable, i, pull.out.size(), "the buffer"));
  }
  for (const SparseVariablePull& pull : request.sparse) {
    RETURN_IF_ERROR(
        CheckDType(*pull.variable, DType::kFloat32, "a read of rows by id"));
    RETURN_IF_ERROR(
        CheckRowsById(pull.variable->spec.name, RowWidth(pull.variable->spec),
                      pull.ids.size(), pull.out.size(), "the buffer"));
  }
  for (const Int64VariablePull& pull : request.int64) {
    RETURN_IF_ERROR(CheckDType(*pull.variable, DType::kInt64, "an int64 read"));
    RETURN_IF_ERROR(
        CheckWhole(planner, *pull.variable, pull.out.size(), "the buffer"));
  }
  for (const HashTablePull& pull : request.hash) {
    RETURN_IF_ERROR(CheckRowsById(pull.table->name, pull.table->dim,
                                  pull.ids.size(), pull.out.size(),
                                  "the buffer"));
  }
  return absl::OkStatus();
}

// What Update checks before anything is sent (ps_requests.h).
absl::Status CheckUpdate(const ps_client_internal::PsRequestPlanner& planner,
                         const UpdateRequest& request) {
  for (size_t i = 0; i < request.dense.size(); ++i) {
    const DenseVariablePush& push = request.dense[i];
    RETURN_IF_ERROR(planner.CheckManyItem(push.variable, i, push.grad.size(),
                                          "the pushed tensor"));
  }
  for (const SparseVariablePush& push : request.sparse) {
    RETURN_IF_ERROR(CheckDType(*push.variable, DType::kFloat32,
                               "a gradient of rows by id"));
    RETURN_IF_ERROR(
        CheckRowsById(push.variable->spec.name, RowWidth(push.variable->spec),
                      push.ids.size(), push.grads.size(), "the gradients"));
  }
  for (const HashTablePush& push : request.hash) {
    RETURN_IF_ERROR(CheckRowsById(push.table->name, push.table->dim,
                                  push.ids.size(), push.grads.size(),
                                  "the gradients"));
  }
  for (const DenseVariableWrite& write : request.writes) {
    RETURN_IF_ERROR(
        CheckDType(*write.variable, DType::kFloat32,
                   write.write == VariableWrite::kAssign ? "Assign" : "Add"));
    RETURN_IF_ERROR(CheckWhole(planner, *write.variable, write.values.size(),
                               "the pushed tensor"));
  }
  for (const Int64VariableAssign& assign : request.int64_assigns) {
    RETURN_IF_ERROR(CheckDType(*assign.variable, DType::kInt64, "AssignInt64"));
    RETURN_IF_ERROR(CheckWhole(planner, *assign.variable, assign.values.size(),
                               "the pushed tensor"));
  }
  for (const Int64VariableAdd& add : request.int64_adds) {
    RETURN_IF_ERROR(CheckDType(*add.variable, DType::kInt64, "AddInt64"));
    RETURN_IF_ERROR(CheckWhole(planner, *add.variable, add.delta.size(),
                               "the pushed tensor"));
    if (!add.after.empty()) {
      RETURN_IF_ERROR(CheckWhole(planner, *add.variable, add.after.size(),
                                 "the buffer for the values after the add"));
    }
  }
  if (request.then_read != nullptr) {
    RETURN_IF_ERROR(CheckRead(planner, *request.then_read));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PsClient::Read(const ReadRequest& request) {
  RETURN_IF_ERROR(CheckRead(impl_->planner(), request));
  return impl_->Read(request);
}

absl::Status PsClient::Update(const UpdateRequest& request) {
  RETURN_IF_ERROR(CheckUpdate(impl_->planner(), request));
  return impl_->Update(request);
}

absl::Status PsClient::CreateHashTable(const HashEmbeddingSpec& spec) {
  ps::CreateHashTableRequest request;
  HashSpecToProto(spec, request.mutable_spec());
  auto calls = CallTasks<ps::HashTableInfo>(
      AllTasks(impl_->channels().num_tasks()), request);
  return impl_->channels().RunAll(
      rpc::kCreateHashTable, calls, impl_->channels().AttemptTimeout(),
      [](auto* async, auto... args) { async->CreateHashTable(args...); });
}

absl::StatusOr<std::vector<ps::GetStatusResponse>> PsClient::Stats() {
  auto calls = CallTasks<ps::GetStatusResponse>(
      AllTasks(impl_->channels().num_tasks()), ps::GetStatusRequest());
  RETURN_IF_ERROR(impl_->channels().RunAll(
      rpc::kGetStatus, calls, impl_->channels().AttemptTimeout(),
      [](auto* async, auto... args) { async->GetStatus(args...); }));
  std::vector<ps::GetStatusResponse> stats;
  for (auto& call : calls) stats.push_back(std::move(call->response));
  return stats;
}

absl::StatusOr<CheckpointSaved> PsClient::Save(const std::string& directory,
                                               int64_t step, int keep_last) {
  return SaveShards(directory, step, keep_last, nullptr);
}

absl::StatusOr<CheckpointSaved> PsClient::SaveDelta(
    const std::string& directory, int64_t step, int keep_last,
    const DeltaSaveOf& delta) {
  return SaveShards(directory, step, keep_last, &delta);
}

absl::StatusOr<CheckpointSaved> PsClient::SaveShards(
    const std::string& directory, int64_t step, int keep_last,
    const DeltaSaveOf* delta) {
  const int n = impl_->channels().num_tasks();
  ps::SaveRequest save;
  save.set_directory(directory);
  save.set_step(step);
  save.set_num_shards(n);
  if (delta != nullptr) {
    save.set_delta_previous(delta->previous);
    save.set_delta_base(delta->base);
  }
  auto saves = CallTasks<ps::SaveResponse>(AllTasks(n), save);
  RETURN_IF_ERROR(impl_->channels().RunAll(
      rpc::kSave, saves, impl_->options().checkpoint_timeout,
      [](auto* async, auto... args) { async->Save(args...); }));
  CheckpointSaved saved;
  for (const auto& call : saves) {
    saved.bytes += call->response.bytes();
    saved.table_rows_written += call->response.table_rows_written();
    saved.table_rows_held += call->response.table_rows_held();
  }
  ps::CommitCheckpointRequest commit_request;
  commit_request.set_directory(directory);
  commit_request.set_step(step);
  commit_request.set_num_shards(n);
  commit_request.set_keep_last(keep_last);
  auto commit = CallTasks<ps::CommitCheckpointResponse>({0}, commit_request);
  RETURN_IF_ERROR(impl_->channels().RunAll(
      rpc::kCommitCheckpoint, commit, impl_->options().checkpoint_timeout,
      [](auto* async, auto... args) { async->CommitCheckpoint(args...); }));
  saved.checkpoint = commit[0]->response.checkpoint();
  saved.deleted.assign(commit[0]->response.deleted().begin(),
                       commit[0]->response.deleted().end());
  return saved;
}

absl::StatusOr<CheckpointRestored> PsClient::Restore(
    const std::string& directory) {
  const int n = impl_->channels().num_tasks();
  CheckpointRestored restored;
  for (bool verify_only : {true, false}) {
    ps::RestoreRequest request;
    request.set_directory(directory);
    request.set_num_shards(n);
    request.set_verify_only(verify_only);
    auto calls = CallTasks<ps::RestoreResponse>(AllTasks(n), request);
    RETURN_IF_ERROR(impl_->channels().RunAll(
        rpc::kRestore, calls, impl_->options().checkpoint_timeout,
        [](auto* async, auto... args) { async->Restore(args...); }));
    restored = CheckpointRestored{calls[0]->response.checkpoint(),
                                  calls[0]->response.step(), 0, 0};
    for (const auto& call : calls) {
      restored.variables_restored += call->response.variables_restored();
      restored.hash_table_rows_restored +=
          call->response.hash_table_rows_restored();
    }
  }
  return restored;
}

absl::Status PsClient::Shutdown(const std::string& reason) {
  ps::ShutdownRequest request;
  request.set_reason(reason);
  auto calls = CallTasks<ps::ShutdownResponse>(
      AllTasks(impl_->channels().num_tasks()), request);
  return impl_->channels().RunAll(
      rpc::kShutdown, calls, impl_->channels().AttemptTimeout(),
      [](auto* async, auto... args) { async->Shutdown(args...); });
}

}  // namespace distrt
