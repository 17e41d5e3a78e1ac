#ifndef DISTRT_RUNTIME_DISTRIBUTE_PS_VARIABLE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_PS_VARIABLE_H_

// Variables on the parameter servers (ParameterServers: ps_server processes
// through PsClient, or in-process stores): one copy, partitioned over ps
// tasks as its placement says. The servers run the optimizer
// (ApplyGradient, ApplySparseGradient); WriteCopy and AddToCopy assign and
// add on the servers without it (TF's assign, assign_add), each atomically
// per part, so that concurrent pushes are never lost.

#include <memory>
#include <string>

#include "runtime/distribute/variable.h"
#include "runtime/ps/parameter_servers.h"

namespace distrt {

class PsVariable : public DistributedVariable {
 public:
  // `servers` must outlive the variable.
  PsVariable(VariableOptions options, ParameterServers* servers,
             VariablePlacement placement)
      : DistributedVariable(std::move(options)),
        servers_(servers),
        placement_(std::move(placement)) {}

  const VariablePlacement& placement() const { return placement_; }
  // The servers it lives on, so that a strategy can read or update several
  // variables of the same servers in one Read / Update.
  ParameterServers* servers() const { return servers_; }

  int num_copies() const override { return 1; }
  int CopyOfReplica(int) const override { return 0; }
  std::string DescribePlacement() const override;

  absl::StatusOr<Tensor> ReadCopy(int copy) const override;
  absl::Status ReadRows(int copy, absl::Span<const int64_t> ids,
                        absl::Span<float> out) const override;
  absl::Status WriteCopy(int copy, const Tensor& value) override;
  absl::Status AddToCopy(int copy, const Tensor& delta) override;
  // int64: one fetch-and-add on the ps tasks.
  absl::StatusOr<Tensor> AddToCopyAndRead(int copy,
                                          const Tensor& delta) override;
  absl::Status ApplyGradient(int copy, absl::Span<const float> grad) override;
  absl::Status ApplySparseGradient(int copy, absl::Span<const int64_t> ids,
                                   absl::Span<const float> grads) override;

 private:
  ParameterServers* const servers_;
  const VariablePlacement placement_;
};

class PsHashTable : public DistributedHashTable {
 public:
  PsHashTable(HashEmbeddingSpec spec, ParameterServers* servers)
      : spec_(std::move(spec)), servers_(servers) {}

  const HashEmbeddingSpec& spec() const override { return spec_; }
  std::string DescribePlacement() const override;
  absl::Status Pull(absl::Span<const int64_t> ids,
                    absl::Span<float> out) override {
    return servers_->PullHash(spec_, ids, out);
  }
  absl::Status Push(absl::Span<const int64_t> ids,
                    absl::Span<const float> grads) override {
    return servers_->PushHash(spec_, ids, grads);
  }
  absl::Status PushAtStep(absl::Span<const int64_t> ids,
                          absl::Span<const float> grads,
                          int64_t global_step) override {
    const HashTablePush push = {&spec_, ids, grads};
    UpdateRequest request;
    request.hash = {&push, 1};
    request.global_step = global_step;
    return servers_->Update(request);
  }

 private:
  const HashEmbeddingSpec spec_;
  ParameterServers* const servers_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_PS_VARIABLE_H_
