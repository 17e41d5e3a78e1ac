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

// A half-open range of rows of a whole variable.
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  friend bool operator==(const RowRange& a, const RowRange& b) {
    return a.begin == b.begin && a.end == b.end;
  }
};

// Largest number of elements a variable may have (2^40, 4 TiB of floats):
// anything larger is refused before any arithmetic can overflow.
inline constexpr int64_t kMaxVariableElements = int64_t{1} << 40;

// INVALID_ARGUMENT naming the variable and the problem: empty name,
// negative dimension, too many elements, invalid initializer or optimizer.
absl::Status ValidateVariableSpec(const VariableSpec& spec);

// Empty when equal; otherwise what differs, e.g. "shape [10, 4] vs [10, 8]".
std::string DescribeSpecDifference(const VariableSpec& a,
                                   const VariableSpec& b);

std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_VARIABLE_SPEC_H_
