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

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_SPARSE_BATCH_ARRAYS_H_
