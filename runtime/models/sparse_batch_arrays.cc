#include "runtime/models/sparse_batch_arrays.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/models/model_inputs.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<SparseBatchArrays> SparseBatchArrays::Upload(
    DeviceArrays& arrays, const Batch& batch) {
  SparseBatchArrays up;
  ASSIGN_OR_RETURN(const int64_t* offsets, arrays.Upload(batch.offsets));
  up.offsets = offsets;
  ASSIGN_OR_RETURN(const float* values, arrays.Upload(batch.values));
  up.values = values;
  ASSIGN_OR_RETURN(const float* labels, arrays.Upload(batch.labels));
  up.labels = labels;
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
  ASSIGN_OR_RETURN(std::vector<int64_t> rows,
                   SliceRowsOfFeatures(batch, variable, slice));
  return arrays.UploadOwned(std::vector<int32_t>(rows.begin(), rows.end()));
}

absl::StatusOr<float*> SparseLinearLogits(
    DeviceArrays& arrays, const SparseBatchArrays& sparse, int64_t num_examples,
    const int32_t* rows, const float* weights, const float* bias) {
  absl::StatusOr<float*> logits = arrays.Zeros(num_examples);
  RETURN_IF_ERROR(logits.status());
  RETURN_IF_ERROR(arrays.math().SparseGatherSum(
      num_examples, 1, sparse.offsets, rows, sparse.values, weights, *logits));
  RETURN_IF_ERROR(arrays.math().AddBias(num_examples, 1, bias, *logits));
  return logits;
}

absl::Status SparseRowsGradient(DeviceArrays& arrays,
                                const SparseBatchArrays& sparse,
                                int64_t num_examples, int64_t width,
                                const int32_t* rows, const float* d_out,
                                absl::Span<float> gradient) {
  ASSIGN_OR_RETURN(float* table, arrays.Zeros(gradient.size()));
  RETURN_IF_ERROR(arrays.math().SparseScatterAdd(
      num_examples, width, sparse.offsets, rows, sparse.values, d_out, table));
  return arrays.Download(table, gradient);
}

}  // namespace distrt
