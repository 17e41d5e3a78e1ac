#ifndef DISTRT_CLIENT_PS_REQUEST_PLANNER_H_
#define DISTRT_CLIENT_PS_REQUEST_PLANNER_H_

// PsRequestPlanner: which requests carry an operation of PsClient, and to
// which ps task (internal to client/): a variable's rows cut into the
// pieces its parts hold, each within max_request_bytes; dense
// variables' small parts batched per ps task (Read / Update of several); sparse
// ids grouped by the part (or hash shard) that holds them, each distinct id
// once; a round's small calls to one task bundled. It checks the caller's
// buffers before anything is sent. Nothing here touches the network or the
// messages' tensors (ps_wire_coding.h).
//
// Thread-safety: immutable after construction; any number of threads may
// plan at once.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/id_repeats.h"
#include "client/ps_calls.h"
#include "client/ps_wire_coding.h"
#include "proto/ps_service.pb.h"
#include "rpc/ps_methods.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"

namespace distrt::ps_client_internal {

class PsRequestPlanner {
 public:
  struct Options {
    int num_tasks = 1;
    // PsClient::Options' fields of these names.
    int64_t max_request_bytes = int64_t{2} << 20;
    int64_t batch_below_bytes = int64_t{64} << 10;
    int64_t bundle_below_bytes = int64_t{256} << 10;
  };

  explicit PsRequestPlanner(const Options& options) : options_(options) {}

  // One request's share of a variable's rows: `rows`, held by `ps_task`,
  // starting `offset` elements into the caller's buffer for the whole
  // range.
  struct Piece {
    int ps_task = 0;
    RowRange rows;
    int64_t offset = 0;
  };

  // Pieces of `rows` of `variable`: one per part it overlaps, each cut into
  // requests of at most max_request_bytes, in order.
  std::vector<Piece> SplitRows(const VariablePlacement& variable,
                               RowRange rows) const;

  // SplitRows's pieces as calls of a PullDense / PushDense, their rows set.
  template <typename Request, typename Response>
  Calls<Request, Response> SplitRowsIntoCalls(const VariablePlacement& variable,
                                              RowRange rows) const {
    Calls<Request, Response> calls;
    for (const Piece& piece : SplitRows(variable, rows)) {
      auto call = std::make_unique<Call<Request, Response>>(piece.ps_task);
      SetRows(variable.spec.name, piece.rows, &call->request);
      call->offset = piece.offset;
      calls.push_back(std::move(call));
    }
    return calls;
  }

  // INVALID_ARGUMENT naming the variable unless `rows` are within it and
  // `buffer` (`what`: "the buffer", "the pushed tensor") holds their
  // elements.
  absl::Status CheckRows(const VariablePlacement& variable, RowRange rows,
                         size_t buffer, absl::string_view what) const;

  // Checks a whole-variable item of a Read / Update: a float32 variable, and a
  // buffer of all its elements (as Pull and Push check it).
  absl::Status CheckManyItem(const VariablePlacement* variable, size_t index,
                             size_t buffer, absl::string_view what) const;

  // The requests of a Read / Update of several whole `variables`. Per ps task:
  // its parts of at most batch_below_bytes (and max_request_bytes) in
  // batches of at most max_request_bytes, sent as `batch_method` (a batch
  // of one as `single_method`), then the other parts in SplitRows's pieces,
  // sent as `single_method`. The tasks' requests are interleaved, so that
  // the first ones in flight go to every task.
  std::vector<std::unique_ptr<ManyCall>> PlanMany(
      const std::vector<const VariablePlacement*>& variables,
      rpc::PsMethod single_method, rpc::PsMethod batch_method) const;

  // The most ids one request of rows of `width` floats carries.
  int64_t MaxIdsPerRequest(int64_t width) const;

  // `ids` of `variable` grouped by the part that holds them: one call per
  // part (and per MaxIdsPerRequest ids) with each distinct id once (the
  // first occurrence, as `repeats` says); each call's positions are those
  // ids' in `ids`, ascending. INVALID_ARGUMENT naming an id that is not a
  // row. For PullSparse and PushSparse.
  template <typename Request, typename Response>
  absl::StatusOr<Calls<Request, Response>> GroupVariableIds(
      const VariablePlacement& variable, absl::Span<const int64_t> ids,
      const IdRepeats& repeats) const;

  // As GroupVariableIds, for the hash table `table`, whose ids are sharded
  // over every ps task. For PullHash and PushHash.
  template <typename Request, typename Response>
  absl::StatusOr<Calls<Request, Response>> GroupHashIds(
      const HashEmbeddingSpec& table, absl::Span<const int64_t> ids,
      const IdRepeats& repeats) const;

  // GroupHashIds's PushHash calls, each telling its ps task `global_step`,
  // the global step the pushing worker knows (UpdateRequest::global_step),
  // by which a table with ttl_steps ages its rows; a negative one (unknown)
  // leaves the field out.
  absl::StatusOr<Calls<ps::PushSparseRequest, ps::PushSparseResponse>>
  GroupHashPushIds(const HashEmbeddingSpec& table,
                   absl::Span<const int64_t> ids, const IdRepeats& repeats,
                   int64_t global_step) const;

  // `round` cut into what is sent as one call: a single call, or calls to
  // one ps task that are small enough to bundle (each carrying at most
  // bundle_below_bytes both ways, a bundle at most twice that, no more than
  // max_request_bytes, and kMaxBundleParts calls); the single calls first,
  // then the bundles, each in round order. A call that waits for its
  // connection, or to a task for which `serves_bundles(task)` is false,
  // goes alone.
  std::vector<std::vector<CallBase*>> BundleUnits(
      const std::vector<CallBase*>& round,
      absl::FunctionRef<bool(int task)> serves_bundles) const;

  // The most calls one Bundle carries.
  static constexpr size_t kMaxBundleParts = 64;

  const Options& options() const { return options_; }

 private:
  const Options options_;
};

// INVALID_ARGUMENT: `what` of `variable` has `given` elements, not
// `expected`.
absl::Status SizeMismatch(absl::string_view variable, absl::string_view what,
                          size_t given, int64_t expected);

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_REQUEST_PLANNER_H_
