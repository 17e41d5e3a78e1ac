#ifndef DISTRT_RUNTIME_PS_VARIABLE_SPEC_H_
#define DISTRT_RUNTIME_PS_VARIABLE_SPEC_H_

// VariableSpec: what a model variable is — name, element type, shape, how it
// starts and how updates are applied to it. Every worker builds the same
// specs from the model, so a spec is compared field by field to decide
// whether a second "create" is the same variable.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/initializer.h"
#include "runtime/tensor/dtype.h"
#include "runtime/tensor/shape.h"

namespace distrt {

struct VariableSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  // The whole variable's shape. Rows are the first dimension (a scalar or a
  // vector of n elements has 1 or n rows of one element); partitions and
  // embedding lookups address rows.
  std::vector<int64_t> shape;
  InitializerSpec initializer;  // float32 only; int64 variables start at 0
  OptimizerConfig optimizer;    // float32 only; int64 pushes are added
};

int64_t NumRows(const VariableSpec& spec);
int64_t RowWidth(const VariableSpec& spec);
// The shape of `rows` of its rows: the variable's shape with the first
// dimension replaced (a scalar stays a scalar).
std::vector<int64_t> ShapeOfRows(const VariableSpec& spec, int64_t rows);

// A half-open range of rows of a whole variable.
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  friend bool operator==(const RowRange& a, const RowRange& b) {
    return a.begin == b.begin && a.end == b.end;
  }
};

// INVALID_ARGUMENT naming the variable and the problem: empty name,
// negative dimension, more than kMaxElements elements, invalid initializer
// or optimizer.
absl::Status ValidateVariableSpec(const VariableSpec& spec);

// Empty when equal; otherwise what differs, e.g. "shape [10, 4] vs [10, 8]".
std::string DescribeSpecDifference(const VariableSpec& a,
                                   const VariableSpec& b);

// "[begin, end)".
std::string RowRangeString(RowRange rows);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_VARIABLE_SPEC_H_
