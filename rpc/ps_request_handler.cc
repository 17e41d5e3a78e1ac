#include "rpc/ps_request_handler.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "rpc/tensor_codec.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

// The rows a request addresses: those it names, or all rows held. Checked
// against the rows held here before anything is sized from them.
template <typename Request>
absl::StatusOr<RowRange> RequestedRows(const Request& request,
                                       const VariableInfo& info) {
  if (!request.has_rows()) return info.rows_held;
  const RowRange rows = RowRangeFromProto(request.rows());
  RETURN_IF_ERROR(CheckRowsHeld(info.spec, info.rows_held, rows));
  return rows;
}

// The ids and gradients of a sparse push, decoded.
struct SparseGradients {
  std::vector<int64_t> id_scratch;
  std::vector<float> grad_scratch;
  absl::Span<const int64_t> ids;
  absl::Span<const float> grads;
};

absl::Status DecodeSparseGradients(const TensorView& id_tensor,
                                   const TensorView& grad_tensor,
                                   absl::string_view owner,
                                   SparseGradients* out) {
  ASSIGN_OR_RETURN(absl::Span<const int64_t> ids,
                   Int64Elements(id_tensor, absl::StrCat("the ids of ", owner),
                                 &out->id_scratch));
  ASSIGN_OR_RETURN(
      absl::Span<const float> grads,
      Float32Elements(grad_tensor, absl::StrCat("the gradients of ", owner),
                      &out->grad_scratch));
  out->ids = ids;
  out->grads = grads;
  return absl::OkStatus();
}

template <typename T>
absl::Span<T> Allocate(PsRequestHandler::ResponseTensor values,
                       ps::DataType dtype, const std::vector<int64_t>& shape,
                       int64_t elements) {
  char* data = values(dtype, shape, elements * int64_t{sizeof(T)});
  return absl::MakeSpan(reinterpret_cast<T*>(data), elements);
}

// What a sparse push's sender says of its ids.
SparseIds IdsOf(const ps::PushSparseRequest& request) {
  return request.ids_distinct() ? SparseIds::kDistinct : SparseIds::kMayRepeat;
}

// A table's spec, size and counters (see HashTableCounters).
void HashTableInfoToProto(const HashEmbeddingTable& table,
                          ps::HashTableInfo* info) {
  HashSpecToProto(table.spec(), info->mutable_spec());
  const HashTableCounters counters = table.counters();
  info->set_num_rows(counters.rows);
  info->set_bytes(counters.rows * table.bytes_per_row());
  info->set_admitted(counters.admitted);
  info->set_evicted_by_ttl(counters.evicted_by_ttl);
  info->set_evicted_by_capacity(counters.evicted_by_capacity);
  info->set_unknown_lookups(counters.unknown_lookups);
  info->set_dropped_pushes(counters.dropped_pushes);
  info->set_clock(counters.clock);
}

}  // namespace

PsRequestHandler::PsRequestHandler(const Options& options)
    : options_(options),
      store_(VariableStore::Options{options.max_variable_bytes}) {}

absl::Status PsRequestHandler::CheckResponseSize(absl::string_view what,
                                                 int64_t bytes) const {
  if (bytes <= options_.max_response_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " would be ", bytes, " bytes, more than the ",
      options_.max_response_bytes, "-byte message limit; ask for fewer rows"));
}

absl::Status PsRequestHandler::CheckRoomForRows(const HashEmbeddingTable& table,
                                                size_t num_ids) const {
  int64_t in_use = store_.TotalBytes();
  for (const HashEmbeddingTable* t : tables_.List()) in_use += t->bytes();
  // Counts every id as new: exact enough far from the limit, and never lets
  // the tables grow past it.
  const int64_t row_bytes = table.bytes_per_row();
  const int64_t wanted = static_cast<int64_t>(num_ids) * row_bytes;
  if (wanted <= options_.max_variable_bytes - in_use) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "hash embedding table \"", table.spec().name, "\": ", num_ids,
      " rows of ", row_bytes,
      " bytes could exceed this parameter server's "
      "memory limit (",
      in_use, " of ", options_.max_variable_bytes, " bytes in use)"));
}

absl::Status PsRequestHandler::CreateVariable(
    const ps::CreateVariableRequest& request, ps::VariableInfo* response) {
  ASSIGN_OR_RETURN(VariableSpec spec, VariableSpecFromProto(request.spec()));
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  const RowRange rows = request.has_rows() ? RowRangeFromProto(request.rows())
                                           : RowRange{0, NumRows(spec)};
  ASSIGN_OR_RETURN(VariableInfo info, store_.Create(spec, rows));
  VariableInfoToProto(info, response);
  return absl::OkStatus();
}

absl::Status PsRequestHandler::LookupVariable(
    const ps::LookupVariableRequest& request,
    ps::VariableInfo* response) const {
  ASSIGN_OR_RETURN(VariableInfo info, store_.Lookup(request.name()));
  VariableInfoToProto(info, response);
  return absl::OkStatus();
}

void PsRequestHandler::ListVariables(
    ps::ListVariablesResponse* response) const {
  for (const VariableInfo& info : store_.List()) {
    VariableInfoToProto(info, response->add_variables());
  }
  for (const HashEmbeddingTable* table : tables_.List()) {
    HashTableInfoToProto(*table, response->add_hash_tables());
  }
}

absl::Status PsRequestHandler::PullDense(const ps::PullDenseRequest& request,
                                         ResponseTensor values) const {
  ASSIGN_OR_RETURN(VariableInfo info, store_.Lookup(request.name()));
  ASSIGN_OR_RETURN(RowRange rows, RequestedRows(request, info));
  const int64_t elements = rows.size() * RowWidth(info.spec);
  RETURN_IF_ERROR(
      CheckResponseSize(absl::StrCat("pulling rows ", RowRangeString(rows),
                                     " of variable \"", request.name(), "\""),
                        elements * DTypeSize(info.spec.dtype)));
  std::vector<int64_t> shape = ShapeOfRows(info.spec, rows.size());
  if (info.spec.dtype == DType::kInt64) {
    return store_.PullInt64(
        request.name(), rows,
        Allocate<int64_t>(values, ps::INT64, shape, elements));
  }
  return store_.PullRows(request.name(), rows,
                         Allocate<float>(values, ps::FLOAT32, shape, elements));
}

template <typename Apply>
absl::Status PsRequestHandler::ApplyOnce(uint64_t request_id, Apply apply) {
  if (!recent_pushes_.Begin(request_id)) return absl::OkStatus();
  absl::Status status = apply();
  if (!status.ok()) recent_pushes_.Forget(request_id);
  return status;
}

absl::Status PsRequestHandler::PushDense(const ps::PushDenseRequest& request,
                                         const TensorView& values,
                                         ps::PushDenseResponse* response) {
  ps::PushDenseResponse unused;
  if (response == nullptr) response = &unused;
  response->clear_values_after();
  bool applied = false;
  RETURN_IF_ERROR(ApplyOnce(request.request_id(), [&] {
    applied = true;
    return ApplyPushDense(request, values, response);
  }));
  if (applied || !request.return_values()) return absl::OkStatus();
  // A copy of an add seen before: its first reply was lost, or the client
  // gave up waiting for it. What the variable holds now includes the add
  // once the first copy is in; a copy that overtakes a first one still
  // being applied reads the values before it (one step behind, for a
  // global step).
  ASSIGN_OR_RETURN(VariableInfo info, store_.Lookup(request.name()));
  ASSIGN_OR_RETURN(RowRange rows, RequestedRows(request, info));
  const int64_t elements = rows.size() * RowWidth(info.spec);
  RETURN_IF_ERROR(CheckResponseSize(
      absl::StrCat("returning the values of variable \"", request.name(), "\""),
      elements * int64_t{sizeof(int64_t)}));
  response->mutable_values_after()->Resize(elements, 0);
  return store_.PullInt64(
      request.name(), rows,
      absl::MakeSpan(response->mutable_values_after()->mutable_data(),
                     response->values_after_size()));
}

absl::Status PsRequestHandler::ApplyPushDense(
    const ps::PushDenseRequest& request, const TensorView& values,
    ps::PushDenseResponse* response) {
  ASSIGN_OR_RETURN(VariableInfo info, store_.Lookup(request.name()));
  ASSIGN_OR_RETURN(RowRange rows, RequestedRows(request, info));
  const std::string what =
      absl::StrCat("the values pushed to variable \"", request.name(), "\"");
  const ps::DenseWrite write = request.write();
  if (write != ps::APPLY_GRADIENT && write != ps::ASSIGN && write != ps::ADD) {
    return absl::InvalidArgumentError(
        absl::StrCat("push to variable \"", request.name(),
                     "\": unknown write ", static_cast<int>(write)));
  }
  // Batch items come without a response: their return_values is ignored.
  const bool return_values = response != nullptr && request.return_values();
  const bool adds_int64 =
      info.spec.dtype == DType::kInt64 && write != ps::ASSIGN;
  if (return_values && !adds_int64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push to variable \"", request.name(),
        "\": return_values is for adds to int64 variables; this one is ",
        DTypeName(info.spec.dtype), (write == ps::ASSIGN ? ", assigned" : "")));
  }
  if (info.spec.dtype == DType::kInt64) {
    std::vector<int64_t> scratch;
    ASSIGN_OR_RETURN(absl::Span<const int64_t> ints,
                     Int64Elements(values, what, &scratch));
    if (write == ps::ASSIGN) {
      return store_.AssignInt64(request.name(), rows, ints);
    }
    absl::Span<int64_t> after;
    if (return_values) {
      RETURN_IF_ERROR(CheckResponseSize(
          absl::StrCat("returning the values of variable \"", request.name(),
                       "\""),
          static_cast<int64_t>(ints.size() * sizeof(int64_t))));
      response->mutable_values_after()->Resize(ints.size(), 0);
      after = absl::MakeSpan(response->mutable_values_after()->mutable_data(),
                             ints.size());
    }
    return store_.AddInt64(request.name(), rows, ints, after);
  }
  if (write != ps::APPLY_GRADIENT) {
    std::vector<float> scratch;
    ASSIGN_OR_RETURN(absl::Span<const float> floats,
                     Float32Elements(values, what, &scratch));
    return write == ps::ASSIGN ? store_.AssignRows(request.name(), rows, floats)
                               : store_.AddRows(request.name(), rows, floats);
  }
  ASSIGN_OR_RETURN(std::vector<absl::Span<const char>> grad,
                   Float32Pieces(values, what));
  return store_.PushRows(request.name(), rows, grad);
}

absl::Status PsRequestHandler::PullDenseBatch(
    const ps::PullDenseBatchRequest& request,
    ps::PullDenseBatchResponse* response) const {
  int64_t total_bytes = 0;
  for (const ps::PullDenseRequest& item : request.pulls()) {
    ps::Tensor* tensor = response->add_pulls()->mutable_values();
    absl::Status s = PullDense(
        item,
        [tensor](ps::DataType dtype, const std::vector<int64_t>& shape,
                 int64_t bytes) -> char* {
          tensor->set_dtype(dtype);
          tensor->mutable_shape()->Assign(shape.begin(), shape.end());
          // A string's storage is aligned for any scalar.
          tensor->mutable_data()->resize(bytes);
          return tensor->mutable_data()->data();
        });
    RETURN_IF_ERROR(s);
    total_bytes += static_cast<int64_t>(tensor->data().size());
    if (s = CheckResponseSize(absl::StrCat("pulling ", request.pulls_size(),
                                           " variables in one batch"),
                              total_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status PsRequestHandler::PushDenseBatch(
    const ps::PushDenseBatchRequest& request) {
  return ApplyOnce(request.request_id(), [&] {
    for (const ps::PushDenseRequest& item : request.pushes()) {
      RETURN_IF_ERROR(ApplyPushDense(item, ViewOf(item.values()), nullptr));
    }
    return absl::OkStatus();
  });
}

absl::Status PsRequestHandler::PullSparse(const ps::PullSparseRequest& request,
                                          const TensorView& id_tensor,
                                          ResponseTensor values) const {
  ASSIGN_OR_RETURN(VariableInfo info, store_.Lookup(request.name()));
  std::vector<int64_t> scratch;
  ASSIGN_OR_RETURN(absl::Span<const int64_t> ids,
                   Int64Elements(id_tensor,
                                 absl::StrCat("the ids of variable \"",
                                              request.name(), "\""),
                                 &scratch));
  const int64_t width = RowWidth(info.spec);
  const int64_t elements = static_cast<int64_t>(ids.size()) * width;
  RETURN_IF_ERROR(CheckResponseSize(
      absl::StrCat("pulling ", ids.size(), " rows of variable \"",
                   request.name(), "\""),
      elements * DTypeSize(info.spec.dtype)));
  return store_.PullSparse(
      request.name(), ids,
      Allocate<float>(values, ps::FLOAT32,
                      {static_cast<int64_t>(ids.size()), width}, elements));
}

absl::Status PsRequestHandler::PushSparse(const ps::PushSparseRequest& request,
                                          const TensorView& ids,
                                          const TensorView& gradients) {
  SparseGradients decoded;
  RETURN_IF_ERROR(DecodeSparseGradients(
      ids, gradients, absl::StrCat("variable \"", request.name(), "\""),
      &decoded));
  return ApplyOnce(request.request_id(), [&] {
    return store_.PushSparse(request.name(), decoded.ids, decoded.grads,
                             IdsOf(request));
  });
}

absl::Status PsRequestHandler::CreateHashTable(
    const ps::CreateHashTableRequest& request, ps::HashTableInfo* response) {
  ASSIGN_OR_RETURN(HashEmbeddingSpec spec, HashSpecFromProto(request.spec()));
  ASSIGN_OR_RETURN(HashEmbeddingTable * table, tables_.Create(spec));
  HashTableInfoToProto(*table, response);
  return absl::OkStatus();
}

absl::Status PsRequestHandler::PullHash(const ps::PullSparseRequest& request,
                                        const TensorView& id_tensor,
                                        ResponseTensor values) {
  ASSIGN_OR_RETURN(HashEmbeddingTable * table, tables_.Find(request.name()));
  std::vector<int64_t> scratch;
  ASSIGN_OR_RETURN(
      absl::Span<const int64_t> ids,
      Int64Elements(id_tensor,
                    absl::StrCat("the ids of hash embedding table \"",
                                 request.name(), "\""),
                    &scratch));
  RETURN_IF_ERROR(CheckRoomForRows(*table, ids.size()));
  const int64_t dim = table->spec().dim;
  const int64_t elements = static_cast<int64_t>(ids.size()) * dim;
  RETURN_IF_ERROR(CheckResponseSize(
      absl::StrCat("pulling ", ids.size(), " rows of hash embedding ",
                   "table \"", request.name(), "\""),
      elements * static_cast<int64_t>(sizeof(float))));
  return table->Pull(
      ids, Allocate<float>(values, ps::FLOAT32,
                           {static_cast<int64_t>(ids.size()), dim}, elements));
}

absl::Status PsRequestHandler::PushHash(const ps::PushSparseRequest& request,
                                        const TensorView& ids,
                                        const TensorView& gradients) {
  ASSIGN_OR_RETURN(HashEmbeddingTable * table, tables_.Find(request.name()));
  SparseGradients decoded;
  RETURN_IF_ERROR(DecodeSparseGradients(
      ids, gradients,
      absl::StrCat("hash embedding table \"", request.name(), "\""), &decoded));
  RETURN_IF_ERROR(CheckRoomForRows(*table, decoded.ids.size()));
  // The worker's global step ages the table's rows (TablePolicy's
  // ttl_steps); without one, the table counts pushes instead.
  const int64_t global_step =
      request.has_global_step() ? request.global_step() : -1;
  if (global_step < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("hash embedding table \"", request.name(),
                     "\": global step ", global_step, " is negative"));
  }
  return ApplyOnce(request.request_id(), [&] {
    return table->Push(decoded.ids, decoded.grads, IdsOf(request), global_step);
  });
}

absl::Status PsRequestHandler::Save(const ps::SaveRequest& request,
                                    ps::SaveResponse* response) {
  absl::MutexLock lock(&checkpoint_mu_);
  SaveShardOptions options;
  options.mark = true;
  if (!request.delta_previous().empty()) {
    const std::string previous =
        JoinPath(request.directory(), request.delta_previous());
    if (marks_at_ != previous) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ps task ", options_.task_index, " cannot save a delta of ", previous,
          ": its tables were last saved or restored as ",
          marks_at_.empty() ? "nothing known (a restart or a failed save)"
                            : marks_at_,
          "; save in full"));
    }
    options.delta.emplace();
    options.delta->set_previous(request.delta_previous());
    options.delta->set_base(request.delta_base());
  }
  // The marks move as the tables are exported: until this save succeeds,
  // no delta may follow anything.
  marks_at_.clear();
  ASSIGN_OR_RETURN(
      SavedShardInfo saved,
      SaveShard(store_, tables_, request.directory(), request.step(),
                options_.task_index, request.num_shards(), options));
  marks_at_ = JoinPath(request.directory(), CheckpointDirName(request.step()));
  response->set_path(saved.path);
  response->set_bytes(saved.bytes);
  response->set_table_rows_written(saved.table_rows_written);
  response->set_table_rows_held(saved.table_rows_held);
  return absl::OkStatus();
}

absl::Status PsRequestHandler::CommitCheckpoint(
    const ps::CommitCheckpointRequest& request,
    ps::CommitCheckpointResponse* response) const {
  ASSIGN_OR_RETURN(
      CommitInfo committed,
      distrt::CommitCheckpoint(request.directory(), request.step(),
                               request.num_shards(), request.keep_last()));
  response->set_checkpoint(committed.checkpoint_dir);
  for (const std::string& deleted : committed.deleted) {
    response->add_deleted(deleted);
  }
  return absl::OkStatus();
}

absl::Status PsRequestHandler::Restore(const ps::RestoreRequest& request,
                                       ps::RestoreResponse* response) {
  absl::MutexLock lock(&checkpoint_mu_);
  if (!request.verify_only()) marks_at_.clear();
  ASSIGN_OR_RETURN(
      RestoreInfo restored,
      RestoreShard(store_, tables_, request.directory(), options_.task_index,
                   request.num_shards(), request.verify_only()));
  if (!request.verify_only()) marks_at_ = restored.checkpoint_dir;
  response->set_checkpoint(restored.checkpoint_dir);
  response->set_step(restored.step);
  response->set_variables_restored(restored.variables_restored);
  response->set_hash_table_rows_restored(restored.hash_table_rows_restored);
  return absl::OkStatus();
}

absl::StatusOr<RestoreInfo> PsRequestHandler::RecreateShard(
    const std::string& dir, int shard_index, int num_shards) {
  absl::MutexLock lock(&checkpoint_mu_);
  marks_at_.clear();
  ASSIGN_OR_RETURN(
      RestoreInfo restored,
      distrt::RecreateShard(store_, tables_, dir, shard_index, num_shards));
  marks_at_ = restored.checkpoint_dir;
  return restored;
}

void PsRequestHandler::FillHoldings(ps::GetStatusResponse* response) const {
  int64_t rows = 0;
  const std::vector<VariableInfo> variables = store_.List();
  for (const VariableInfo& info : variables) rows += info.rows_held.size();
  response->set_num_variables(variables.size());
  response->set_variable_bytes(store_.TotalBytes());
  response->set_variable_rows(rows);
  int64_t table_rows = 0;
  int64_t table_bytes = 0;
  const std::vector<HashEmbeddingTable*> tables = tables_.List();
  for (const HashEmbeddingTable* table : tables) {
    ps::HashTableInfo* info = response->add_hash_tables();
    HashTableInfoToProto(*table, info);
    table_rows += info->num_rows();
    table_bytes += info->bytes();
  }
  response->set_num_hash_tables(tables.size());
  response->set_hash_table_rows(table_rows);
  response->set_hash_table_bytes(table_bytes);
  response->set_duplicate_pushes(recent_pushes_.duplicates());
}

}  // namespace distrt::rpc
