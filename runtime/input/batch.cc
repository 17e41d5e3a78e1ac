#include "runtime/input/batch.h"

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distrt {

absl::StatusOr<Batch> MakeBatch(absl::Span<const Example> examples) {
  Batch batch;
  batch.size = static_cast<int64_t>(examples.size());
  batch.num_dense =
      examples.empty() ? 0 : static_cast<int64_t>(examples[0].dense.size());

  // Validate before allocating, so that the sizes below are exact.
  size_t num_sparse = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& example = examples[i];
    if (static_cast<int64_t>(example.dense.size()) != batch.num_dense) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, " has ", example.dense.size(),
                       " dense features, example 0 has ", batch.num_dense));
    }
    // An Example invariant; a violation would misalign the CSR arrays.
    if (example.ids.size() != example.values.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, " has ", example.ids.size(),
                       " sparse ids but ", example.values.size(), " values"));
    }
    num_sparse += example.ids.size();
  }

  batch.labels.reserve(examples.size());
  batch.dense.reserve(examples.size() * batch.num_dense);
  batch.offsets.reserve(examples.size() + 1);
  batch.ids.reserve(num_sparse);
  batch.values.reserve(num_sparse);
  batch.offsets.push_back(0);
  for (const Example& example : examples) {
    batch.labels.push_back(example.label);
    batch.dense.insert(batch.dense.end(), example.dense.begin(),
                       example.dense.end());
    batch.ids.insert(batch.ids.end(), example.ids.begin(), example.ids.end());
    batch.values.insert(batch.values.end(), example.values.begin(),
                        example.values.end());
    batch.offsets.push_back(static_cast<int64_t>(batch.ids.size()));
  }
  return batch;
}

}  // namespace distrt
