#ifndef DISTRT_RUNTIME_MODELS_MODEL_INPUTS_H_
#define DISTRT_RUNTIME_MODELS_MODEL_INPUTS_H_

// What the built-in models check of the batches and variable values they are
// given, and how they find the row of a sparse feature's id in a variable
// slice. Batches come from files and values from parameter servers, so a
// mismatch is an error to report (naming the example, the feature id or the
// variable), never a crash.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/input/batch.h"
#include "runtime/models/model.h"

namespace distrt {

// size >= 0 and one label per example.
absl::Status CheckLabels(const Batch& batch);
// Every label finite (regression targets).
absl::Status CheckFiniteLabels(const Batch& batch);
// Every label 0 or 1.
absl::Status CheckBinaryLabels(const Batch& batch);
// Every label a whole number in [0, num_classes).
absl::Status CheckClassLabels(const Batch& batch, int num_classes);

// num_features dense features per example (not checked for an empty batch,
// which may have none at all), and size * num_dense of them in all.
absl::Status CheckDenseFeatures(const Batch& batch, int64_t num_features);
// Consistent CSR arrays (size + 1 non-decreasing offsets from 0 to the
// number of ids, as many values as ids; an empty batch may have no offsets)
// and every id in [0, num_features).
absl::Status CheckSparseFeatures(const Batch& batch, int64_t num_features);

// The sorted distinct ids of the batch's sparse features:
// batch.distinct_ids where they still describe batch.ids (checked in
// linear time), else sorted here.
std::vector<int64_t> DistinctFeatureIds(const Batch& batch);

// One slice per variable, each as Model::Compute documents it: a kDense
// slice holds every element; a sparse slice holds strictly increasing ids
// (within the variable's rows for kRowSparse) and their rows.
absl::Status CheckValues(absl::Span<const ModelVariable> variables,
                         absl::Span<const VariableSlice> values);

// For each of the batch's sparse features (in CSR order), the index in
// slice.ids of its id (batch.distinct_index's where that is it). `slice`
// must have passed CheckValues. INVALID_ARGUMENT
// naming the variable, the example and the id when the slice lacks the id.
absl::StatusOr<std::vector<int64_t>> SliceRowsOfFeatures(
    const Batch& batch, const ModelVariable& variable,
    const VariableSlice& slice);

// Zeros in the layout of `values`: as many dense elements, the same ids and
// as many row values.
VariableSlice ZeroGradient(const VariableSlice& values);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_MODEL_INPUTS_H_
