#ifndef DISTRT_RUNTIME_DISTRIBUTE_PARAMETER_SERVER_STRATEGY_H_
#define DISTRT_RUNTIME_DISTRIBUTE_PARAMETER_SERVER_STRATEGY_H_

// ParameterServerStrategy, as one worker sees it: variables live on the ps
// tasks (ParameterServers: ps_server processes through PsClient; placed
// round-robin or greedily, large ones partitioned by rows, hash tables sharded
// by id), and the training step is replicated over this worker's devices.
// Replicas are reduced synchronously inside the worker, then one update per
// step goes to the servers, which apply it with their optimizer; workers do not
// wait for each other. First-replica-only work (the global step) happens once
// per worker step.
//
// Without ps tasks (no servers, or none in them) it trains locally, as TF's
// ParameterServerStrategy does without a cluster: variables in this
// process's host memory, one copy that every replica reads (what
// CentralStorageStrategy does), so a program written for parameter servers
// runs unchanged on one machine.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "runtime/distribute/background_push.h"
#include "runtime/distribute/strategy.h"
#include "runtime/ps/parameter_servers.h"

namespace distrt {

class PsVariable;

class ParameterServerStrategy : public Strategy {
 public:
  // `devices` (non-empty) and `servers` must outlive the strategy; null
  // `servers`, or servers with no ps task, is the local fallback above.
  // `wait_for_servers`: how long Initialize waits for every ps task.
  static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> Create(
      std::vector<Device*> devices, ParameterServers* servers,
      StrategyOptions options = {},
      absl::Duration wait_for_servers = absl::Minutes(5));

  std::string name() const override { return "ParameterServerStrategy"; }
  std::string Describe() const override;
  // Whether variables live on ps tasks (false: the local fallback).
  bool has_ps_tasks() const { return servers_ != nullptr; }
  // Only with ps tasks.
  ParameterServers& servers() const { return *servers_; }

  // Waits until every ps task answers (nothing to wait for without).
  absl::Status Initialize() override;
  // Waits for the push in flight (StrategyOptions::push_in_background).
  absl::Status Finalize() override;
  absl::Status WaitForUpdates() override;
  // push_in_background, with ps tasks.
  bool updates_in_background() const override { return background_ != nullptr; }
  // Updates started in the background so far.
  int64_t num_background_pushes() const {
    return background_ == nullptr ? 0 : background_->num_started();
  }

  // Refused for a variable on the ps tasks: FAILED_PRECONDITION naming it
  // and the atomic alternatives (Assign, AssignAdd, AssignSub,
  // ApplyGradient), since a read, fn, then an assign would overwrite what
  // other workers push in between. Sync-on-read variables, which live on
  // the worker, and the local fallback's variables update as under any
  // strategy.
  absl::Status Update(DistributedVariable& variable,
                      const std::function<absl::Status(Tensor&)>& fn) override;

 protected:
  absl::StatusOr<std::unique_ptr<DistributedVariable>> MakeSyncOnWriteVariable(
      const VariableOptions& options,
      const DistributedVariable* colocate_with) override;
  absl::StatusOr<std::unique_ptr<DistributedHashTable>> MakeHashTable(
      const HashEmbeddingSpec& spec) override;
  // The float32 variables on this strategy's ps tasks, whole and rows by
  // id, go in one ParameterServers::Read / Update (which PsClient sends in
  // one round, small ones batched or bundled per ps task), with an int64
  // add (the global step's) in the Update; others (int64 reads,
  // sync-on-read variables on the worker) one at a time.
  absl::StatusOr<std::vector<Tensor>> ReadCopies(
      absl::Span<const VariableCopy> copies,
      absl::Span<const CopyRows> rows) const override;
  absl::Status ApplyGradientsToCopies(
      absl::Span<const CopyGradient> updates,
      absl::Span<const CopySparseGradient> sparse, const CopyAdd* add) override;
  // With ps tasks and no push in the background, when every update, the
  // add and every read go to the ps tasks: one ParameterServers::Update
  // with the reads as its then_read (a step's updates and the next step's
  // reads in one round trip). Anything else: the two calls above.
  absl::StatusOr<std::vector<Tensor>> ApplyGradientsToCopiesThenRead(
      absl::Span<const CopyGradient> updates,
      absl::Span<const CopySparseGradient> sparse, const CopyAdd* add,
      absl::Span<const VariableCopy> copies,
      absl::Span<const CopyRows> rows) override;

 private:
  ParameterServerStrategy(std::vector<Device*> devices,
                          std::unique_ptr<CrossDeviceOps> ops,
                          StrategyOptions options, ParameterServers* servers,
                          absl::Duration wait_for_servers)
      : Strategy(std::move(devices), std::move(ops), std::move(options)),
        servers_(servers),
        wait_for_servers_(wait_for_servers) {}

  // What ApplyGradientsToCopies sends when it goes in the background:
  // copies of the gradients (the caller's go away when the step returns).
  struct OwnedPush;
  // Copies the update into an OwnedPush and starts it on background_, after
  // the push before it; null `add->after` where the global step it leaves
  // is not known yet (the first push, which then goes in the foreground).
  absl::Status PushInBackground(absl::Span<const CopyGradient> updates,
                                absl::Span<const CopySparseGradient> sparse,
                                const CopyAdd* add, const PsVariable* added);

  ParameterServers* const servers_;  // null: the local fallback
  const absl::Duration wait_for_servers_;
  // The value the last push's add (the global step's) left; -1 before one
  // is known. Written by the push, on background_'s thread or in the
  // foreground; read only once background_ has no push in flight (its
  // mutex orders the two).
  int64_t last_added_value_ = -1;
  // Set with push_in_background and ps tasks. Declared last: destroyed
  // first, it waits for its push, which uses the members above.
  std::unique_ptr<BackgroundPush> background_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_PARAMETER_SERVER_STRATEGY_H_
