#ifndef DISTRT_RPC_PS_REQUEST_HANDLER_H_
#define DISTRT_RPC_PS_REQUEST_HANDLER_H_

// PsRequestHandler: what a ps task does with each request of the
// ParameterServer service, on the decoded messages and without gRPC, so the
// service's behaviour is unit-testable and the transport stays thin.
//
// Every request is checked before anything is allocated or changed: unknown
// names are NOT_FOUND, wrong shapes, dtypes, ranges and lengths are
// INVALID_ARGUMENT naming the variable and both sizes, and a response that
// would exceed the message limit is RESOURCE_EXHAUSTED. Thread-safe.
//
// Tensors travel apart from their messages (rpc/wire_message.h): a request's
// tensor fields are left unset and passed as TensorViews, and a pull writes
// its result into memory the transport provides (ResponseTensor), so neither
// passes through a protobuf copy.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "proto/ps_service.pb.h"
#include "rpc/tensor_codec.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/recent_request_ids.h"
#include "runtime/ps/variable_store.h"

namespace distrt::rpc {

class PsRequestHandler {
 public:
  struct Options {
    int task_index = 0;
    // Largest response (tensor bytes) a pull may produce; requests are
    // bounded by the transport's receive limit.
    int64_t max_response_bytes = int64_t{256} << 20;
    // Memory for variables, hash-table rows and their optimizer slots.
    int64_t max_variable_bytes = int64_t{64} << 30;
  };

  explicit PsRequestHandler(const Options& options);

  // Where a pull writes its result: called once, with the tensor's dtype,
  // shape and size in bytes, before any element is written; returns memory
  // for that many bytes (aligned for the dtype), valid until the response is
  // sent.
  using ResponseTensor = absl::FunctionRef<char*(
      ps::DataType dtype, const std::vector<int64_t>& shape, int64_t bytes)>;

  absl::Status CreateVariable(const ps::CreateVariableRequest& request,
                              ps::VariableInfo* response);
  absl::Status LookupVariable(const ps::LookupVariableRequest& request,
                              ps::VariableInfo* response) const;
  void ListVariables(ps::ListVariablesResponse* response) const;

  absl::Status PullDense(const ps::PullDenseRequest& request,
                         ResponseTensor values) const;
  // Every push is applied once per request_id (see
  // runtime/ps/recent_request_ids.h): a copy sent again is answered OK
  // without being applied. `response` (may be null: nothing to return)
  // receives the values after an int64 add the request asks them of.
  absl::Status PushDense(const ps::PushDenseRequest& request,
                         const TensorView& values,
                         ps::PushDenseResponse* response = nullptr);
  // Small variables several at a time, as protobuf messages (their tensors
  // are small): each item as PullDense / PushDense. The pulls' total is
  // bounded like one pull's; a push item that fails stops the batch, the
  // items before it staying applied.
  absl::Status PullDenseBatch(const ps::PullDenseBatchRequest& request,
                              ps::PullDenseBatchResponse* response) const;
  absl::Status PushDenseBatch(const ps::PushDenseBatchRequest& request);
  absl::Status PullSparse(const ps::PullSparseRequest& request,
                          const TensorView& ids, ResponseTensor values) const;
  absl::Status PushSparse(const ps::PushSparseRequest& request,
                          const TensorView& ids, const TensorView& gradients);

  absl::Status CreateHashTable(const ps::CreateHashTableRequest& request,
                               ps::HashTableInfo* response);
  absl::Status PullHash(const ps::PullSparseRequest& request,
                        const TensorView& ids, ResponseTensor values);
  absl::Status PushHash(const ps::PushSparseRequest& request,
                        const TensorView& ids, const TensorView& gradients);

  // A delta save (request.delta_previous set) is FAILED_PRECONDITION unless
  // this task's tables were last saved or restored as that checkpoint of
  // request.directory (marks_at_).
  absl::Status Save(const ps::SaveRequest& request, ps::SaveResponse* response);
  absl::Status CommitCheckpoint(const ps::CommitCheckpointRequest& request,
                                ps::CommitCheckpointResponse* response) const;
  absl::Status Restore(const ps::RestoreRequest& request,
                       ps::RestoreResponse* response);

  // For a task that restarted: see RecreateShard (ps_checkpoint.h).
  absl::StatusOr<RestoreInfo> RecreateShard(const std::string& dir,
                                            int shard_index, int num_shards);

  // Fills the holdings part of GetStatusResponse (variables, tables, bytes,
  // rows, duplicate pushes, and each hash table's counters); the transport
  // adds identity and request counts.
  void FillHoldings(ps::GetStatusResponse* response) const;

 private:
  // Runs `apply` (a push) unless `request_id` was applied lately; forgets
  // the id again when it fails.
  template <typename Apply>
  absl::Status ApplyOnce(uint64_t request_id, Apply apply);
  absl::Status ApplyPushDense(const ps::PushDenseRequest& request,
                              const TensorView& values,
                              ps::PushDenseResponse* response);

  // RESOURCE_EXHAUSTED when `num_ids` new rows of `table` could take the
  // memory of variables and tables past max_variable_bytes.
  absl::Status CheckRoomForRows(const HashEmbeddingTable& table,
                                size_t num_ids) const;
  // RESOURCE_EXHAUSTED unless `bytes` fit in a response.
  absl::Status CheckResponseSize(absl::string_view what, int64_t bytes) const;

  const Options options_;
  VariableStore store_;
  HashTableSet tables_;
  RecentRequestIds recent_pushes_;
  // Saves and restores one at a time, and the checkpoint directory
  // (<directory>/ckpt-<step>) that the tables' save marks are relative to:
  // the last saved (full or delta) or restored; empty when unknown (none
  // yet, or the last save or restore failed), so that only a full save may
  // come next.
  absl::Mutex checkpoint_mu_;
  std::string marks_at_ ABSL_GUARDED_BY(checkpoint_mu_);
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_PS_REQUEST_HANDLER_H_
