#ifndef DISTRT_RUNTIME_MODELS_SPARSE_BATCH_ARRAYS_H_
#define DISTRT_RUNTIME_MODELS_SPARSE_BATCH_ARRAYS_H_

// SparseBatchArrays: a batch's sparse features (CSR offsets and values) and
// labels in device memory, and, per sparse variable, the row of each feature
// in that variable's slice, as DeviceMath's SparseGatherSum and
// SparseScatterAdd take them.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/input/batch.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/model.h"

namespace distrt {

struct SparseBatchArrays {
  const int64_t* offsets = nullptr;  // batch.size + 1
  const float* values = nullptr;     // one per feature
  const float* labels = nullptr;     // batch.size

  // Uploads `batch`'s offsets, values and labels.
  static absl::StatusOr<SparseBatchArrays> Upload(DeviceArrays& arrays,
                                                  const Batch& batch);
};

// For each feature of `batch`, the index in slice.ids of its id, on the
// device (int32: a slice holds far fewer than 2^31 rows).
// INVALID_ARGUMENT as SliceRowsOfFeatures, or when the slice is that large.
absl::StatusOr<const int32_t*> UploadSliceRows(DeviceArrays& arrays,
                                               const Batch& batch,
                                               const ModelVariable& variable,
                                               const VariableSlice& slice);

// The sparse linear layer of a [rows, 1] row-sparse weight: logits[i] =
// bias + the sum over example i's features of value * weight of its row, a
// new device array of num_examples.
absl::StatusOr<float*> SparseLinearLogits(
    DeviceArrays& arrays, const SparseBatchArrays& sparse, int64_t num_examples,
    const int32_t* rows, const float* weights, const float* bias);

// The gradient of the rows a batch used (a row-sparse weight's, or an
// embedding's): values[k] * d_out[i, :] scatter-added per feature into
// zeros, downloaded into `gradient` (the slice's rows, width floats each).
absl::Status SparseRowsGradient(DeviceArrays& arrays,
                                const SparseBatchArrays& sparse,
                                int64_t num_examples, int64_t width,
                                const int32_t* rows, const float* d_out,
                                absl::Span<float> gradient);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_SPARSE_BATCH_ARRAYS_H_
