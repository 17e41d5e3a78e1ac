#ifndef DISTRT_RUNTIME_DISTRIBUTE_LOCAL_VARIABLE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_LOCAL_VARIABLE_H_

// Variables that live in this process: LocalVariable keeps each copy in its
// own VariableStore (the parameter server's store, so initial values,
// optimizer slots and sparse updates behave exactly as on a ps task), and
// LocalHashTable keeps one HashEmbeddingTable on the host.
//
// Copies start identical (initial values are a function of the seed and the
// element index) and stay identical when every copy gets the same updates,
// which is how MirroredStrategy keeps its mirrors in sync without copying
// values.

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/device.h"
#include "runtime/distribute/variable.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/variable_store.h"

namespace distrt {

class LocalVariable : public DistributedVariable {
 public:
  // One copy per entry of `copy_devices`; replica r computes with copy
  // copy_of_replica[r]. INVALID_ARGUMENT for an invalid spec.
  static absl::StatusOr<std::unique_ptr<LocalVariable>> Create(
      VariableOptions options, std::vector<Device*> copy_devices,
      std::vector<int> copy_of_replica, std::string placement);

  int num_copies() const override { return static_cast<int>(copies_.size()); }
  int CopyOfReplica(int replica) const override {
    return copy_of_replica_[replica];
  }
  std::string DescribePlacement() const override { return placement_; }

  absl::StatusOr<Tensor> ReadCopy(int copy) const override;
  absl::Status ReadRows(int copy, absl::Span<const int64_t> ids,
                        absl::Span<float> out) const override;
  absl::Status WriteCopy(int copy, const Tensor& value) override;
  absl::Status AddToCopy(int copy, const Tensor& delta) override;
  absl::Status ApplyGradient(int copy, absl::Span<const float> grad) override;
  absl::Status ApplySparseGradient(int copy, absl::Span<const int64_t> ids,
                                   absl::Span<const float> grads) override;
  absl::StatusOr<VariableState> ExportState(int copy) const override;
  absl::Status ImportState(const VariableState& state) override;

 private:
  struct Copy {
    Device* device = nullptr;
    VariableStore store;
    // Serialises this copy's read-modify-write updates (WriteCopy and
    // AddToCopy work on a snapshot) with its other updates.
    absl::Mutex update_mu;
  };

  LocalVariable(VariableOptions options, std::vector<int> copy_of_replica,
                std::string placement)
      : DistributedVariable(std::move(options)),
        copy_of_replica_(std::move(copy_of_replica)),
        placement_(std::move(placement)) {}

  RowRange AllRows() const;
  // INVALID_ARGUMENT naming the variable and both sizes unless `state` fits
  // every copy (what VariableStore::Replace would check), so that
  // ImportState can check once before it replaces any copy.
  absl::Status CheckFitsState(const VariableState& state) const;

  std::vector<std::unique_ptr<Copy>> copies_;
  const std::vector<int> copy_of_replica_;
  const std::string placement_;
};

class LocalHashTable : public DistributedHashTable {
 public:
  static absl::StatusOr<std::unique_ptr<LocalHashTable>> Create(
      const HashEmbeddingSpec& spec);

  const HashEmbeddingSpec& spec() const override { return table_->spec(); }
  std::string DescribePlacement() const override { return "on the host"; }
  absl::Status Pull(absl::Span<const int64_t> ids,
                    absl::Span<float> out) override {
    return table_->Pull(ids, out);
  }
  absl::Status Push(absl::Span<const int64_t> ids,
                    absl::Span<const float> grads) override {
    return table_->Push(ids, grads);
  }
  absl::Status PushAtStep(absl::Span<const int64_t> ids,
                          absl::Span<const float> grads,
                          int64_t global_step) override {
    return table_->Push(ids, grads, SparseIds::kMayRepeat, global_step);
  }
  absl::StatusOr<HashTableState> ExportState() const override {
    return table_->Export();
  }
  absl::Status ImportState(HashTableState state) override {
    return table_->Replace(std::move(state));
  }

 private:
  explicit LocalHashTable(std::unique_ptr<HashEmbeddingTable> table)
      : table_(std::move(table)) {}
  std::unique_ptr<HashEmbeddingTable> table_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_LOCAL_VARIABLE_H_
