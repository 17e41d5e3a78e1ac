#ifndef DISTRT_RUNTIME_INPUT_EXAMPLE_H_
#define DISTRT_RUNTIME_INPUT_EXAMPLE_H_

// Example: one training record as the record parsers produce it. A plain
// struct; which fields are filled depends on the format and, for named
// features, on the feature spec (feature_spec.h).

#include <cstdint>
#include <vector>

namespace distrt {

// The ids one example looks up in one embedding group's table (all the
// group's categorical features together, in the spec's order), with a
// weight each: empty `weights` means every weight is 1.
struct GroupIds {
  std::vector<int64_t> ids;
  std::vector<float> weights;  // empty, or ids.size() of them
};

struct Example {
  float label = 0.0f;
  // Dense features in order, without the label: CSV's columns, or a feature
  // spec's numeric features concatenated in the spec's order.
  std::vector<float> dense;
  // Sparse features (LIBSVM): 0-based ids, strictly increasing, and their
  // values; ids.size() == values.size(). A value may be an explicit 0.
  std::vector<int64_t> ids;
  std::vector<float> values;
  // With a feature spec: one entry per embedding group, in the spec's
  // order; empty without one.
  std::vector<GroupIds> groups;
  // Where it came from, for errors found after reading (a label the model
  // cannot take): the 1-based line of its file (text formats; for TFRecord
  // the 0-based record index + 1), 0 when not read from one; and the index
  // of that file in the list its pipeline reads, -1 when not read by one.
  int64_t line = 0;
  int32_t file = -1;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_EXAMPLE_H_
