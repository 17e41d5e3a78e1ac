#ifndef DISTRT_RUNTIME_INPUT_BATCH_H_
#define DISTRT_RUNTIME_INPUT_BATCH_H_

// Batch: the examples one replica computes a step on, laid out for the
// models' matrix code: labels as a vector, dense features as a row-major
// matrix, sparse features in compressed sparse row (CSR) form.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/input/example.h"

namespace distrt {

struct Batch {
  int64_t size = 0;           // examples
  std::vector<float> labels;  // size

  // Dense features: size rows of num_dense floats (empty when the examples
  // have none).
  int64_t num_dense = 0;
  std::vector<float> dense;

  // Sparse features: example i's are ids/values[offsets[i], offsets[i+1]).
  // offsets has size + 1 entries (all 0 when the examples have none).
  std::vector<int64_t> offsets;
  std::vector<int64_t> ids;
  std::vector<float> values;

  // Derived from `ids`, so that a training step need not sort them again:
  // the distinct ids in increasing order, and for each entry of `ids` the
  // index of its id in `distinct_ids`. MakeBatch makes them (on the input
  // pipeline's prefetch thread, off the step's path); IndexDistinctIds
  // makes them for a batch built otherwise. Models use them only where they
  // still describe `ids` (checked: a batch edited afterwards is sorted
  // again); empty when not made.
  std::vector<int64_t> distinct_ids;
  std::vector<int32_t> distinct_index;

  // Embedding groups (feature_spec.h), one per group in the spec's order;
  // empty without a spec. Example i's ids in group g are
  // groups[g].ids[offsets[i], offsets[i+1]).
  struct Group {
    std::vector<int64_t> offsets;  // size + 1
    std::vector<int64_t> ids;
    // Empty when every weight is 1, else one per id.
    std::vector<float> weights;
    // As distinct_ids/distinct_index above, for this group's ids.
    std::vector<int64_t> distinct_ids;
    std::vector<int32_t> distinct_index;
  };
  std::vector<Group> groups;
};

// The examples in order as one batch. INVALID_ARGUMENT when the examples'
// dense feature counts or numbers of groups differ (naming the first
// example that differs).
absl::StatusOr<Batch> MakeBatch(absl::Span<const Example> examples);

// Fills batch.distinct_ids and batch.distinct_index from batch.ids (leaves
// them empty for a batch of 2^31 or more sparse features).
void IndexDistinctIds(Batch& batch);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_BATCH_H_
