#ifndef DISTRT_RUNTIME_IN_MEMORY_PS_IN_MEMORY_PARAMETER_SERVERS_H_
#define DISTRT_RUNTIME_IN_MEMORY_PS_IN_MEMORY_PARAMETER_SERVERS_H_

// InMemoryParameterServers: ParameterServers whose ps tasks are stores in
// this process (one VariableStore and HashTableSet per task), with the same
// placement, optimizers and errors as ps_server processes reached through
// PsClient. Used by ParameterServerStrategy when a job has no ps tasks (TF
// then trains locally) and by the strategies' unit tests.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/parameter_servers.h"
#include "runtime/ps/variable_store.h"

namespace distrt {

class InMemoryParameterServers : public ParameterServers {
 public:
  // INVALID_ARGUMENT when num_ps_tasks < 1.
  static absl::StatusOr<std::unique_ptr<InMemoryParameterServers>> Create(
      int num_ps_tasks,
      PlacementStrategy placement = PlacementStrategy::kRoundRobin);

  // Task `ps_task`'s variables (0 <= ps_task < num_ps_tasks()).
  const VariableStore& store(int ps_task) const {
    return tasks_[ps_task]->variables;
  }
  // Where `name` was placed; NOT_FOUND when it was not created here.
  absl::StatusOr<VariablePlacement> Lookup(absl::string_view name) const;

  int num_ps_tasks() const override { return tasks_.size(); }
  absl::Status WaitForServers(absl::Duration) override {
    return absl::OkStatus();
  }
  using ParameterServers::CreateVariable;
  absl::StatusOr<VariablePlacement> CreateVariable(
      const CreateVariableRequest& request) override;
  absl::StatusOr<VariablePlacement> LookupVariable(
      absl::string_view name) override {
    return Lookup(name);
  }
  absl::Status CreateHashTable(const HashEmbeddingSpec& spec) override;
  // Checks every item, then reads them one after another.
  absl::Status Read(const ReadRequest& request) override;
  // Checks every item (then_read's too), then applies the writes, the
  // hash-table gradients, the dense and sparse gradients and the int64 adds
  // one after another, then reads then_read: every read sees every update.
  absl::Status Update(const UpdateRequest& request) override;
  // Each task's shard is a file, as a ps_server writes it
  // (runtime/checkpoint/ps_checkpoint.h).
  absl::StatusOr<CheckpointSaved> Save(const std::string& directory,
                                       int64_t step, int keep_last) override;
  // As a ps_server does it: refused unless every task's tables were last
  // saved or restored as delta.previous.
  absl::StatusOr<CheckpointSaved> SaveDelta(const std::string& directory,
                                            int64_t step, int keep_last,
                                            const DeltaSaveOf& delta) override;
  absl::StatusOr<CheckpointRestored> Restore(
      const std::string& directory) override;

 private:
  struct Task {
    VariableStore variables;
    HashTableSet hash_tables;
    // The checkpoint directory its tables' save marks are relative to
    // (see PsRequestHandler); guarded by checkpoint_mu_.
    std::string marks_at;
  };
  // Save and SaveDelta; `delta` null for a full save.
  absl::StatusOr<CheckpointSaved> SaveShards(const std::string& directory,
                                             int64_t step, int keep_last,
                                             const DeltaSaveOf* delta);
  explicit InMemoryParameterServers(int num_ps_tasks, VariablePlacer placer);

  // The operations on one item, each checking it first.
  absl::Status ReadDense(const VariablePlacement& variable,
                         absl::Span<float> out);
  absl::Status ReadInt64(const VariablePlacement& variable,
                         absl::Span<int64_t> out);
  absl::Status ReadRows(const VariablePlacement& variable,
                        absl::Span<const int64_t> ids, absl::Span<float> out);
  absl::Status ReadHash(const HashEmbeddingSpec& table,
                        absl::Span<const int64_t> ids, absl::Span<float> out);
  absl::Status ApplyDense(const VariablePlacement& variable,
                          absl::Span<const float> grad);
  absl::Status ApplyRows(const VariablePlacement& variable,
                         absl::Span<const int64_t> ids,
                         absl::Span<const float> grads);
  // `global_step`: the UpdateRequest's, which the tables age rows by.
  absl::Status ApplyHash(const HashEmbeddingSpec& table,
                         absl::Span<const int64_t> ids,
                         absl::Span<const float> grads, int64_t global_step);
  absl::Status WriteDense(const DenseVariableWrite& write);
  absl::Status AssignInt64Whole(const VariablePlacement& variable,
                                absl::Span<const int64_t> values);
  absl::Status AddInt64Whole(const VariablePlacement& variable,
                             absl::Span<const int64_t> delta,
                             absl::Span<int64_t> after);
  // INVALID_ARGUMENT (or NOT_FOUND for a hash table that does not exist)
  // for the first item of `request` that its operation would refuse.
  absl::Status CheckRead(const ReadRequest& request) const;
  absl::Status CheckUpdate(const UpdateRequest& request) const;
  // Read, once CheckRead has passed.
  absl::Status ReadChecked(const ReadRequest& request);

  // Creates every part of `placement` on its task.
  absl::StatusOr<VariablePlacement> CreateParts(VariablePlacement placement);
  // INVALID_ARGUMENT naming the variable unless its placement is valid and
  // within this object's tasks.
  absl::Status CheckPlacement(const VariablePlacement& variable) const;
  // The same, and unless it has `dtype` and `elements` is its number of
  // elements.
  absl::Status CheckWhole(const VariablePlacement& variable, DType dtype,
                          size_t elements) const;
  VariableStore& Store(const VariablePart& part) {
    return tasks_[part.ps_task]->variables;
  }
  // The positions in `ids` of each part's ids, after checking the placement
  // and that `values` are ids.size() rows; INVALID_ARGUMENT naming an id
  // that is not a row.
  absl::StatusOr<std::vector<std::vector<size_t>>> PositionsByPart(
      const VariablePlacement& variable, absl::Span<const int64_t> ids,
      size_t values) const;
  // A table's shard on every task and the positions of each task's ids.
  struct HashShards {
    std::vector<HashEmbeddingTable*> tables;
    std::vector<std::vector<size_t>> positions;
  };
  absl::StatusOr<HashShards> Shards(const HashEmbeddingSpec& table,
                                    absl::Span<const int64_t> ids,
                                    size_t values) const;

  std::vector<std::unique_ptr<Task>> tasks_;
  // One save or restore at a time: a commit rewrites the index.
  absl::Mutex checkpoint_mu_;
  mutable absl::Mutex placer_mu_;
  VariablePlacer placer_ ABSL_GUARDED_BY(placer_mu_);
  absl::flat_hash_map<std::string, VariablePlacement> placed_
      ABSL_GUARDED_BY(placer_mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_IN_MEMORY_PS_IN_MEMORY_PARAMETER_SERVERS_H_
