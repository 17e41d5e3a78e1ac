#include "runtime/models/sparse_batch_arrays.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/models/model_inputs.h"

namespace distrt {

absl::StatusOr<SparseBatchArrays> SparseBatchArrays::Upload(
    DeviceArrays& arrays, const Batch& batch) {
  SparseBatchArrays up;
  absl::StatusOr<const int64_t*> offsets = arrays.Upload(batch.offsets);
  if (!offsets.ok()) return offsets.status();
  up.offsets = *offsets;
  absl::StatusOr<const float*> values = arrays.Upload(batch.values);
  if (!values.ok()) return values.status();
  up.values = *values;
  absl::StatusOr<const float*> labels = arrays.Upload(batch.labels);
  if (!labels.ok()) return labels.status();
  up.labels = *labels;
  return up;
}

absl::StatusOr<const int32_t*> UploadSliceRows(DeviceArrays& arrays,
                                               const Batch& batch,
                                               const ModelVariable& variable,
                                               const VariableSlice& slice) {
  if (slice.ids.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch uses ", slice.ids.size(), " rows of ",
                     variable.name(), "; at most 2^31 - 1 are supported"));
  }
  absl::StatusOr<std::vector<int64_t>> rows =
      SliceRowsOfFeatures(batch, variable, slice);
  if (!rows.ok()) return rows.status();
  return arrays.UploadOwned(std::vector<int32_t>(rows->begin(), rows->end()));
}

}  // namespace distrt
