#include "runtime/distribute/ps_variable.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/tensor/host_floats.h"
#include "runtime/util/status_macros.h"

namespace distrt {

std::string PsVariable::DescribePlacement() const {
  std::vector<std::string> parts;
  for (const VariablePart& part : placement_.parts) {
    parts.push_back(absl::StrCat("ps task ", part.ps_task, " rows ",
                                 RowRangeString(part.rows)));
  }
  return absl::StrCat("on ", absl::StrJoin(parts, ", "));
}

absl::StatusOr<Tensor> PsVariable::ReadCopy(int copy) const {
  RETURN_IF_ERROR(CheckCopy(copy));
  absl::StatusOr<Tensor> value = Tensor::Create(spec().dtype, spec().shape);
  RETURN_IF_ERROR(value.status());
  RETURN_IF_ERROR(spec().dtype == DType::kInt64
                      ? servers_->PullInt64(placement_, value->flat<int64_t>())
                      : servers_->Pull(placement_, value->flat<float>()));
  return value;
}

absl::Status PsVariable::ReadRows(int copy, absl::Span<const int64_t> ids,
                                  absl::Span<float> out) const {
  RETURN_IF_ERROR(CheckCopy(copy));
  return servers_->PullSparse(placement_, ids, out);
}

absl::Status PsVariable::WriteCopy(int copy, const Tensor& value) {
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckFits("assigning", value));
  if (spec().dtype == DType::kInt64) {
    return servers_->AssignInt64(placement_, value.flat<int64_t>());
  }
  ASSIGN_OR_RETURN(HostFloats values, HostFloats::Read(value));
  return servers_->Assign(placement_, values.values());
}

absl::Status PsVariable::AddToCopy(int copy, const Tensor& delta) {
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckFits("adding to", delta));
  if (spec().dtype == DType::kInt64) {
    return servers_->AddInt64(placement_, delta.flat<int64_t>(), {});
  }
  ASSIGN_OR_RETURN(HostFloats values, HostFloats::Read(delta));
  return servers_->Add(placement_, values.values());
}

absl::StatusOr<Tensor> PsVariable::AddToCopyAndRead(int copy,
                                                    const Tensor& delta) {
  if (spec().dtype != DType::kInt64) {
    return DistributedVariable::AddToCopyAndRead(copy, delta);
  }
  RETURN_IF_ERROR(CheckCopy(copy));
  RETURN_IF_ERROR(CheckFits("adding to", delta));
  ASSIGN_OR_RETURN(Tensor after, Tensor::Create(spec().dtype, spec().shape));
  RETURN_IF_ERROR(servers_->AddInt64(placement_, delta.flat<int64_t>(),
                                     after.flat<int64_t>()));
  return after;
}

absl::Status PsVariable::ApplyGradient(int copy, absl::Span<const float> grad) {
  RETURN_IF_ERROR(CheckCopy(copy));
  return servers_->Push(placement_, grad);
}

absl::Status PsVariable::ApplySparseGradient(int copy,
                                             absl::Span<const int64_t> ids,
                                             absl::Span<const float> grads) {
  RETURN_IF_ERROR(CheckCopy(copy));
  return servers_->PushSparse(placement_, ids, grads);
}

std::string PsHashTable::DescribePlacement() const {
  return absl::StrCat("sharded by id over ", servers_->num_ps_tasks(),
                      " ps tasks");
}

}  // namespace distrt
