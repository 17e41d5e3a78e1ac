#ifndef DISTRT_RUNTIME_INPUT_EXAMPLE_H_
#define DISTRT_RUNTIME_INPUT_EXAMPLE_H_

// Example: one training record as the record readers produce it. A plain
// struct; which fields are filled depends on the reader.

#include <cstdint>
#include <vector>

namespace distrt {

struct Example {
  float label = 0.0f;
  // Dense features in column order, without the label (CSV).
  std::vector<float> dense;
  // Sparse features (LIBSVM): 0-based ids, strictly increasing, and their
  // values; ids.size() == values.size(). A value may be an explicit 0.
  std::vector<int64_t> ids;
  std::vector<float> values;
  // Where it came from, for errors found after reading (a label the model
  // cannot take): the 1-based line of its file, 0 when not read from one;
  // and the index of that file in the list ReadInputShard read, -1 when not
  // read by it.
  int64_t line = 0;
  int32_t file = -1;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_EXAMPLE_H_
