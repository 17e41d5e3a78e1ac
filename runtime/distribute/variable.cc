#include "runtime/distribute/variable.h"

#include "absl/strings/str_cat.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::string_view VariableSynchronizationName(VariableSynchronization s) {
  return s == VariableSynchronization::kOnWrite ? "ON_WRITE" : "ON_READ";
}

absl::string_view VariableAggregationName(VariableAggregation a) {
  switch (a) {
    case VariableAggregation::kNone:
      return "NONE";
    case VariableAggregation::kSum:
      return "SUM";
    case VariableAggregation::kMean:
      return "MEAN";
    case VariableAggregation::kOnlyFirstReplica:
      return "ONLY_FIRST_REPLICA";
  }
  return "?";
}

absl::StatusOr<VariableState> DistributedVariable::ExportState(int copy) const {
  return absl::UnimplementedError(absl::StrCat(
      "variable \"", name(), "\" (", DescribePlacement(),
      ") cannot export its state: variables on parameter servers are "
      "checkpointed by the ps tasks"));
}

absl::Status DistributedVariable::ImportState(const VariableState& state) {
  return absl::UnimplementedError(absl::StrCat(
      "variable \"", name(), "\" (", DescribePlacement(),
      ") cannot import a state: variables on parameter servers are "
      "restored by the ps tasks"));
}

absl::StatusOr<HashTableState> DistributedHashTable::ExportState() const {
  return absl::UnimplementedError(
      absl::StrCat("hash table \"", spec().name, "\" (", DescribePlacement(),
                   ") cannot export its rows: tables on parameter servers are "
                   "checkpointed by the ps tasks"));
}

absl::Status DistributedHashTable::ImportState(HashTableState state) {
  return absl::UnimplementedError(absl::StrCat(
      "hash table \"", spec().name, "\" (", DescribePlacement(),
      ") cannot import rows: tables on parameter servers are restored by "
      "the ps tasks"));
}

absl::Status DistributedVariable::CheckCopy(int copy) const {
  if (copy < 0 || copy >= num_copies()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", name(), "\" has no copy ", copy,
                     " (it has ", num_copies(), ")"));
  }
  return absl::OkStatus();
}

absl::Status DistributedVariable::CheckFits(absl::string_view what,
                                            const Tensor& value) const {
  if (value.is_null() || value.dtype() != spec().dtype ||
      value.shape() != spec().shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " variable \"", name(), "\" (", DTypeName(spec().dtype),
        ShapeString(spec().shape), ") with ", DescribeTensor(value)));
  }
  return absl::OkStatus();
}

absl::Status DistributedVariable::AddToCopyReadingInto(int copy,
                                                       const Tensor& delta,
                                                       Tensor* after) {
  if (after == nullptr) return AddToCopy(copy, delta);
  ASSIGN_OR_RETURN(*after, AddToCopyAndRead(copy, delta));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DistributedVariable::AddToCopyAndRead(
    int copy, const Tensor& delta) {
  RETURN_IF_ERROR(AddToCopy(copy, delta));
  return ReadCopy(copy);
}

}  // namespace distrt
