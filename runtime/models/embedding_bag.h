#ifndef DISTRT_RUNTIME_MODELS_EMBEDDING_BAG_H_
#define DISTRT_RUNTIME_MODELS_EMBEDDING_BAG_H_

// EmbeddingBags: one embedding group's ids in a batch (Batch::Group) laid
// over the rows of its table that a step was given, pooled per example as
// TensorFlow's embedding_column pools them, and the gradient of that
// pooling scattered back onto the rows. A TorchScript module with feature
// groups (torchscript_model.h) gets the pooled [batch, dim] tensors; this
// is what turns them into and back from table rows, in C++, so that only a
// batch's rows travel to and from the ps tasks.
//
// Pooling of example b's ids k with weights w_k (1 when the group has
// none), as tf.nn.safe_embedding_lookup_sparse does for embedding_column:
//   ids with a weight <= 0 are left out (TF prunes them);
//   sum    pooled_b = sum_k w_k row(k)
//   mean   pooled_b = sum_k w_k row(k) / sum_k w_k
//   sqrtn  pooled_b = sum_k w_k row(k) / sqrt(sum_k w_k^2)
//   an example with no ids left gets zeros.
// So each id contributes factor_k = w_k * scale_b to its example, and its
// row's gradient is factor_k times the example's pooled gradient (summed
// over the ids that share the row).
//
// Plain data and const functions: safe to use from several threads.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/batch.h"
#include "runtime/input/feature_spec.h"
#include "runtime/models/model.h"

namespace distrt {

// The group's CSR arrays fit a batch of `batch_size` (batch_size + 1
// non-decreasing offsets from 0 to the number of ids; no weights or one
// finite weight per id) and, with `buckets` >= 1, every id is in
// [0, buckets). INVALID_ARGUMENT naming group `name`, the example and the
// id otherwise.
absl::Status CheckEmbeddingGroup(const Batch::Group& group, int64_t batch_size,
                                 int64_t buckets, absl::string_view name);

// The sorted distinct ids of the group: group.distinct_ids where they still
// describe group.ids (checked in linear time), else sorted here.
std::vector<int64_t> DistinctGroupIds(const Batch::Group& group);

class EmbeddingBags {
 public:
  // `group` must have passed CheckEmbeddingGroup; `table` holds rows of
  // `dim` floats for its sorted distinct `ids`. INVALID_ARGUMENT naming
  // table `name` and the id when the table lacks a row the group needs.
  static absl::StatusOr<EmbeddingBags> Make(
      const Batch::Group& group, int64_t batch_size, Combiner combiner,
      const VariableSlice& table, int64_t dim, absl::string_view name);

  // [batch_size, dim], row-major, pooled from `table` (the one Make saw).
  std::vector<float> Pool(const VariableSlice& table) const;

  // The gradient of the rows of `table` (same ids, as many rows) given the
  // loss's gradient with respect to Pool's result.
  VariableSlice Scatter(const VariableSlice& table,
                        const std::vector<float>& pooled_gradients) const;

 private:
  EmbeddingBags() = default;

  int64_t batch_size_ = 0;
  int64_t dim_ = 0;
  std::vector<int64_t> offsets_;  // the group's: batch_size_ + 1
  // Per id of the group: its row in the table, -1 when pruned (weight
  // <= 0), and the factor its row is pooled with (weight * scale).
  std::vector<int64_t> rows_;
  std::vector<float> factors_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_EMBEDDING_BAG_H_
