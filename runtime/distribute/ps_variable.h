#ifndef DISTRT_RUNTIME_DISTRIBUTE_PS_VARIABLE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_PS_VARIABLE_H_

// Variables on the parameter servers, reached through a PsClient: one copy,
// partitioned over ps tasks as its placement says. The servers run the
// optimizer, so a ps variable changes only through gradients
// (ApplyGradient, ApplySparseGradient) and, for int64 variables such as the
// global step, AddToCopy; assigning a value, or adding to a float32
// variable, is UNIMPLEMENTED with a message saying so.

#include <memory>
#include <string>

#include "client/ps_client.h"
#include "runtime/distribute/variable.h"

namespace distrt {

class PsVariable : public DistributedVariable {
 public:
  // `client` must outlive the variable.
  PsVariable(VariableOptions options, PsClient* client,
             VariablePlacement placement)
      : DistributedVariable(std::move(options)),
        client_(client),
        placement_(std::move(placement)) {}

  const VariablePlacement& placement() const { return placement_; }
  // The client it is reached through, so that a strategy can read or update
  // several variables of one client in one PsClient::PullMany / PushMany.
  PsClient* client() const { return client_; }

  int num_copies() const override { return 1; }
  int CopyOfReplica(int) const override { return 0; }
  std::string DescribePlacement() const override;

  absl::StatusOr<Tensor> ReadCopy(int copy) const override;
  absl::Status ReadRows(int copy, absl::Span<const int64_t> ids,
                        absl::Span<float> out) const override;
  absl::Status WriteCopy(int copy, const Tensor& value) override;
  absl::Status AddToCopy(int copy, const Tensor& delta) override;
  absl::Status ApplyGradient(int copy, absl::Span<const float> grad) override;
  absl::Status ApplySparseGradient(int copy, absl::Span<const int64_t> ids,
                                   absl::Span<const float> grads) override;

 private:
  PsClient* const client_;
  const VariablePlacement placement_;
};

class PsHashTable : public DistributedHashTable {
 public:
  PsHashTable(HashEmbeddingSpec spec, PsClient* client)
      : spec_(std::move(spec)), client_(client) {}

  const HashEmbeddingSpec& spec() const override { return spec_; }
  std::string DescribePlacement() const override;
  absl::Status Pull(absl::Span<const int64_t> ids,
                    absl::Span<float> out) override {
    return client_->PullHash(spec_, ids, out);
  }
  absl::Status Push(absl::Span<const int64_t> ids,
                    absl::Span<const float> grads) override {
    return client_->PushHash(spec_, ids, grads);
  }

 private:
  const HashEmbeddingSpec spec_;
  PsClient* const client_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_PS_VARIABLE_H_
