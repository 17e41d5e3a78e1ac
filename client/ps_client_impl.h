#ifndef DISTRT_CLIENT_PS_CLIENT_IMPL_H_
#define DISTRT_CLIENT_PS_CLIENT_IMPL_H_

// PsClient's inside, private to the ps_client target: the client's
// operations composed of its pieces, which it owns: PsChannels (gRPC
// channels, deadlines, retries), PsRequestPlanner (which requests, to
// which ps task), the wire coding (ps_wire_coding.h: tensors in and out of
// messages) and PsTransport (a round of calls over gRPC or the TCP data
// planes), plus the variables this client placed. The front class
// (ps_client.cc) checks its arguments and calls these.
//
// Thread-safety: thread-safe, as PsClient; the placer and what it placed
// are guarded by placer_mu_, everything else is constant after
// construction or synchronises itself.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "client/id_repeats.h"
#include "client/ps_calls.h"
#include "client/ps_channels.h"
#include "client/ps_client.h"
#include "client/ps_request_planner.h"
#include "client/ps_transport.h"
#include "client/ps_wire_coding.h"
#include "proto/ps_service.pb.h"
#include "rpc/data_plane_tls.h"
#include "rpc/ps_methods.h"
#include "runtime/ps/placement.h"

namespace distrt {

class PsClient::Impl {
 public:
  // `options` as PsClient::Create checked them; `data_plane_tls`: the
  // job's TLS on the data plane (null: plain TCP).
  Impl(Options options, std::vector<std::string> addresses,
       VariablePlacer placer,
       std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls);

  // Options, with `log` set (stderr when it was not).
  const Options& options() const { return options_; }
  ps_client_internal::PsChannels& channels() { return channels_; }
  const ps_client_internal::PsRequestPlanner& planner() const {
    return planner_;
  }
  ps_client_internal::PsTransport& transport() { return transport_; }

  // Pulls `rows` of `variable` into `out` (float or int64_t).
  template <typename T>
  absl::Status PullDense(const VariablePlacement& variable, RowRange rows,
                         absl::Span<T> out);

  // Pushes `values` (float or int64_t) to `rows` as `write` says. `after`,
  // for an int64 add, when not empty (as many elements as `values`),
  // receives the values the add left, which the ps sends back in the same
  // round trip.
  template <typename T>
  absl::Status PushDense(const VariablePlacement& variable, RowRange rows,
                         absl::Span<const T> values,
                         ps::DenseWrite write = ps::APPLY_GRADIENT,
                         absl::Span<int64_t> after = {});

  // PsClient::Read and Update after the front class checked `request`:
  // each picks the operations below that send its items as PsClient::Read
  // and Update say.
  absl::Status Read(const ReadRequest& request);
  absl::Status Update(const UpdateRequest& request);

  // Several whole float32 variables: small parts batched per ps task, the
  // requests sent in one round (without bundles).
  absl::Status PullMany(absl::Span<const DenseVariablePull> pulls);
  absl::Status PushMany(absl::Span<const DenseVariablePush> pushes);

  // A step's updates and reads, their sizes checked by the caller, all
  // their requests sent in one round (either side may be empty): PushMany
  // of `dense_pushes`, a PushSparse of each of `sparse_pushes` and an
  // AddInt64 of each of `adds`, then PullMany of `dense_pulls` and a
  // PullSparse of each of `sparse_pulls`. A ps task's small calls go in
  // bundles, pushes first, each served in order, so reads bundled with
  // updates see them; calls that go apart (see ParameterServers::Update)
  // may be served in either order.
  absl::Status PushPullStep(absl::Span<const DenseVariablePush> dense_pushes,
                            absl::Span<const SparseVariablePush> sparse_pushes,
                            absl::Span<const Int64VariableAdd> adds,
                            absl::Span<const DenseVariablePull> dense_pulls,
                            absl::Span<const SparseVariablePull> sparse_pulls);

  // Pulls the rows of `table`'s `ids` (their sizes checked by the caller)
  // into `out`, each where its id is in the list.
  absl::Status PullHash(const HashEmbeddingSpec& table,
                        absl::Span<const int64_t> ids, absl::Span<float> out);
  // Pushes `grads` (one row per id of `ids`) to `table`'s rows; where ids
  // repeat, each distinct id's gradients summed in the order they appear.
  // `global_step`: the UpdateRequest's, told to every ps task pushed to.
  absl::Status PushHash(const HashEmbeddingSpec& table,
                        absl::Span<const int64_t> ids,
                        absl::Span<const float> grads, int64_t global_step);

  absl::Mutex placer_mu_;
  VariablePlacer placer_ ABSL_GUARDED_BY(placer_mu_);
  // What this client placed, so creating a variable again gives the same
  // placement instead of the placer's next one.
  absl::flat_hash_map<std::string, VariablePlacement> placed_
      ABSL_GUARDED_BY(placer_mu_);

 private:
  using CallBase = ps_client_internal::CallBase;
  using ManyCall = ps_client_internal::ManyCall;
  using DensePushCall =
      ps_client_internal::Call<ps::PushDenseRequest, ps::PushDenseResponse>;
  using SparsePullCall = ps_client_internal::SparsePullCall;
  using SparsePushCall = ps_client_internal::SparsePushCall;

  // Where an int64 add's values after go, and whether a ps task answered
  // without them (a ps_server older than return_values): they are then
  // read after the add.
  struct ValuesAfter {
    const VariablePlacement* variable = nullptr;
    RowRange rows;
    absl::Span<int64_t> after;  // empty: not asked for
    std::atomic<bool> missing{false};
  };

  // How each call of a round's response is decoded (none: nothing to
  // decode beyond the status).
  using Decoders =
      absl::flat_hash_map<const CallBase*, std::function<absl::Status()>>;

  // The calls of a step's reads, planned and encoded; they must outlive the
  // round they go in.
  struct PullPlan {
    std::vector<std::unique_ptr<ManyCall>> dense_calls;
    std::vector<IdRepeats> repeats;
    std::vector<std::vector<std::unique_ptr<SparsePullCall>>> sparse_calls;
  };

  // The calls of a step's updates, planned and encoded; they must outlive the
  // round they go in.
  struct PushPlan {
    std::vector<std::unique_ptr<ManyCall>> dense_calls;
    std::vector<std::vector<std::unique_ptr<SparsePushCall>>> sparse_calls;
    std::vector<std::vector<std::unique_ptr<DensePushCall>>> add_calls;
    // One per add (as add_calls), made in place (an atomic does not move)
    // and never resized.
    std::unique_ptr<ValuesAfter[]> values_after;
  };

  // PushDense's requests, checked, planned and encoded (sent from `values`
  // itself: the calls must end before it goes).
  template <typename T>
  absl::StatusOr<std::vector<std::unique_ptr<DensePushCall>>> PlanDensePush(
      const VariablePlacement& variable, RowRange rows,
      absl::Span<const T> values, ps::DenseWrite write,
      absl::Span<int64_t> after);
  // Copies the values after the add that `call`'s response carries into
  // `values.after` (nothing when they were not asked for).
  absl::Status DecodeValuesAfter(DensePushCall& call, ValuesAfter& values);
  absl::Status ReadValuesAfterIfMissing(ValuesAfter& values);

  // PullMany's requests for `pulls` (checked by the caller), planned and
  // encoded.
  absl::StatusOr<std::vector<std::unique_ptr<ManyCall>>> PlanPullMany(
      absl::Span<const DenseVariablePull> pulls);
  // Decodes the response of one of PlanPullMany's calls into the buffers of
  // `pulls`.
  absl::Status DecodeManyPulled(ManyCall& call,
                                absl::Span<const DenseVariablePull> pulls);
  // PushMany's requests for `pushes` (checked by the caller), planned and
  // encoded (large pieces sent from the caller's buffers).
  absl::StatusOr<std::vector<std::unique_ptr<ManyCall>>> PlanPushMany(
      absl::Span<const DenseVariablePush> pushes);

  // Plans PullMany of `dense` and a PullSparse of each of `sparse` (their
  // sizes checked by the caller) into `plan`, appending the calls to `all`
  // and how to decode each response to `decoders`.
  absl::Status PlanPullStep(absl::Span<const DenseVariablePull> dense,
                            absl::Span<const SparseVariablePull> sparse,
                            PullPlan& plan, std::vector<CallBase*>& all,
                            Decoders& decoders);
  // What a step's reads need once its round has answered: rows of repeated ids.
  static void FinishPullStep(const PullPlan& plan,
                             absl::Span<const SparseVariablePull> sparse);
  // Plans PushMany of `dense`, a PushSparse of each of `sparse` (their
  // sizes checked by the caller) and an AddInt64 of each of `adds` (int64,
  // checked by the caller) into `plan`, appending the calls to `all` and
  // how to decode each response to `decoders`.
  absl::Status PlanPushStep(absl::Span<const DenseVariablePush> dense,
                            absl::Span<const SparseVariablePush> sparse,
                            absl::Span<const Int64VariableAdd> adds,
                            PushPlan& plan, std::vector<CallBase*>& all,
                            Decoders& decoders);
  // What a step's updates need once its round has answered: the adds' values
  // after that did not come back.
  absl::Status FinishPushStep(PushPlan& plan);
  // Runs a round of `all`, decoding each response with `decoders`.
  absl::Status RunStepRound(std::vector<CallBase*> all,
                            const Decoders& decoders);

  // Constant after construction.
  const Options options_;
  ps_client_internal::PsChannels channels_;
  const ps_client_internal::PsRequestPlanner planner_;
  ps_client_internal::PsTransport transport_;
};

}  // namespace distrt

#endif  // DISTRT_CLIENT_PS_CLIENT_IMPL_H_
