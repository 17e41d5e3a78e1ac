#include "runtime/distribute/local_variable.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/tensor/dtype.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<LocalVariable>> LocalVariable::Create(
    VariableOptions options, std::vector<Device*> copy_devices,
    std::vector<int> copy_of_replica, std::string placement) {
  RETURN_IF_ERROR(ValidateVariableSpec(options.spec));
  std::unique_ptr<LocalVariable> variable(new LocalVariable(
      std::move(options), std::move(copy_of_replica), std::move(placement)));
  for (Device* device : copy_devices) {
    auto copy = std::make_unique<Copy>();
    copy->device = device;
    RETURN_IF_ERROR(
        (copy->store.Create(variable->spec(), variable->AllRows())).status());
    variable->copies_.push_back(std::move(copy));
  }
  return variable;
}

RowRange LocalVariable::AllRows() const { return {0, NumRows(spec())}; }

absl::StatusOr<Tensor> LocalVariable::ReadCopy(int copy) const {
  RETURN_IF_ERROR(CheckCopy(copy));
  const Copy& c = *copies_[copy];
  absl::StatusOr<Tensor> value = Tensor::Create(spec().dtype, spec().shape);
  RETURN_IF_ERROR(value.status());
  absl::Status s =
      spec().dtype == DType::kInt64
          ? c.store.PullInt64(name(), AllRows(), value->flat<int64_t>())
          : c.store.PullRows(name(), AllRows(), value->flat<float>());
  RETURN_IF_ERROR(s);
  // In host memory, where the store (and the optimizer) is, whatever the
  // copy's device: a GPU replica's model copies what it reads up once, and
  // host readers (the train step, checkpoints, metrics) need no copy back.
  return value;
}

absl::Status LocalVariable::ReadRows(int copy, absl::Span<const int64_t> ids,
                                     absl::Span<float> out) const {
  RETURN_IF_ERROR(CheckCopy(copy));
  return copies_[copy]->store.PullSparse(name(), ids, out);
}

absl::Status LocalVariable::WriteCopy(int copy, const Tensor& value) {
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckFits("assigning", value));
  Copy& c = *copies_[copy];
  absl::MutexLock lock(&c.update_mu);
  ASSIGN_OR_RETURN(VariableState state, c.store.Snapshot(name()));
  if (spec().dtype == DType::kInt64) {
    auto from = value.flat<int64_t>();
    state.ints.assign(from.begin(), from.end());
  } else {
    auto from = value.flat<float>();
    state.values.assign(from.begin(), from.end());
  }
  return c.store.Replace(name(), std::move(state));
}

absl::Status LocalVariable::AddToCopy(int copy, const Tensor& delta) {
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckFits("adding to", delta));
  Copy& c = *copies_[copy];
  absl::MutexLock lock(&c.update_mu);
  if (spec().dtype == DType::kInt64) {
    return c.store.AddInt64(name(), AllRows(), delta.flat<int64_t>());
  }
  ASSIGN_OR_RETURN(VariableState state, c.store.Snapshot(name()));
  auto add = delta.flat<float>();
  for (size_t i = 0; i < add.size(); ++i) state.values[i] += add[i];
  return c.store.Replace(name(), std::move(state));
}

absl::Status LocalVariable::ApplyGradient(int copy,
                                          absl::Span<const float> grad) {
  RETURN_IF_ERROR(CheckCopy(copy));
  Copy& c = *copies_[copy];
  absl::MutexLock lock(&c.update_mu);
  return c.store.PushRows(name(), AllRows(), grad);
}

absl::Status LocalVariable::ApplySparseGradient(int copy,
                                                absl::Span<const int64_t> ids,
                                                absl::Span<const float> grads) {
  RETURN_IF_ERROR(CheckCopy(copy));
  Copy& c = *copies_[copy];
  absl::MutexLock lock(&c.update_mu);
  return c.store.PushSparse(name(), ids, grads);
}

absl::StatusOr<VariableState> LocalVariable::ExportState(int copy) const {
  RETURN_IF_ERROR(CheckCopy(copy));
  // No need for update_mu: every update reaches the store as one atomic
  // call (WriteCopy and AddToCopy compute aside and Replace in one go), and
  // Snapshot copies under the store's lock, so it never sees half of one.
  return copies_[copy]->store.Snapshot(name());
}

absl::Status LocalVariable::CheckFitsState(const VariableState& state) const {
  const int64_t elements = NumRows(spec()) * RowWidth(spec());
  const bool is_float = spec().dtype == DType::kFloat32;
  const size_t slots =
      is_float ? SlotNames(spec().optimizer.kind).size() : size_t{0};
  auto mismatch = [&](absl::string_view what, size_t got, int64_t want) {
    return absl::InvalidArgumentError(
        absl::StrCat("importing a state into variable \"", name(), "\" (",
                     DTypeName(spec().dtype), ShapeString(spec().shape),
                     "): ", what, " has ", got, " elements, expected ", want));
  };
  if (state.step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("importing a state into variable \"", name(), "\": step ",
                     state.step, " is negative"));
  }
  if (is_float ? state.values.size() != static_cast<size_t>(elements)
               : state.ints.size() != static_cast<size_t>(elements)) {
    return mismatch(is_float ? "its float32 values" : "its int64 values",
                    is_float ? state.values.size() : state.ints.size(),
                    elements);
  }
  if (!(is_float ? state.ints.empty() : state.values.empty())) {
    return mismatch(is_float ? "its int64 values" : "its float32 values",
                    is_float ? state.ints.size() : state.values.size(), 0);
  }
  if (state.slots.size() != slots) {
    return absl::InvalidArgumentError(absl::StrCat(
        "importing a state into variable \"", name(), "\": it has ",
        state.slots.size(), " optimizer slots, expected ", slots, " (",
        is_float ? OptimizerName(spec().optimizer.kind)
                 : absl::string_view("int64 variables have none"),
        ")"));
  }
  for (size_t i = 0; i < slots; ++i) {
    if (state.slots[i].size() != static_cast<size_t>(elements)) {
      return mismatch(absl::StrCat("its slot \"",
                                   SlotNames(spec().optimizer.kind)[i], "\""),
                      state.slots[i].size(), elements);
    }
  }
  return absl::OkStatus();
}

absl::Status LocalVariable::ImportState(const VariableState& state) {
  // Checked once here, so that Replace cannot refuse a later copy after an
  // earlier one was replaced.
  RETURN_IF_ERROR(CheckFitsState(state));
  for (const std::unique_ptr<Copy>& c : copies_) {
    // update_mu: WriteCopy and AddToCopy read a snapshot and replace it;
    // replacing in between would be undone by them.
    absl::MutexLock lock(&c->update_mu);
    RETURN_IF_ERROR(c->store.Replace(name(), state));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LocalHashTable>> LocalHashTable::Create(
    const HashEmbeddingSpec& spec) {
  ASSIGN_OR_RETURN(std::unique_ptr<HashEmbeddingTable> table,
                   HashEmbeddingTable::Create(spec));
  return std::unique_ptr<LocalHashTable>(new LocalHashTable(std::move(table)));
}

}  // namespace distrt
