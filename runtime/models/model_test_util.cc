#include "runtime/models/model_test_util.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/ps/initializer.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The values of one slice, dense or sparse, as one array.
std::vector<float>& Elements(VariableSlice& slice) {
  return slice.dense.empty() ? slice.rows : slice.dense;
}
const std::vector<float>& Elements(const VariableSlice& slice) {
  return slice.dense.empty() ? slice.rows : slice.dense;
}

double Loss(const Model& model, const Batch& batch,
            const std::vector<VariableSlice>& values) {
  ModelStepResult result;
  const absl::Status status =
      model.Compute(batch, values, /*with_gradients=*/false, &result);
  EXPECT_TRUE(status.ok()) << status;
  return result.loss_sum;
}

}  // namespace

Batch DenseBatch(std::vector<float> labels,
                 const std::vector<std::vector<float>>& rows) {
  Batch batch;
  batch.size = static_cast<int64_t>(labels.size());
  batch.labels = std::move(labels);
  batch.num_dense = rows.empty() ? 0 : static_cast<int64_t>(rows[0].size());
  for (const std::vector<float>& row : rows) {
    batch.dense.insert(batch.dense.end(), row.begin(), row.end());
  }
  batch.offsets.assign(batch.size + 1, 0);
  return batch;
}

Batch SparseBatch(std::vector<float> labels,
                  const std::vector<SparseFeatures>& features) {
  Batch batch;
  batch.size = static_cast<int64_t>(labels.size());
  batch.labels = std::move(labels);
  batch.offsets.push_back(0);
  for (const SparseFeatures& example : features) {
    for (const auto& [id, value] : example) {
      batch.ids.push_back(id);
      batch.values.push_back(value);
    }
    batch.offsets.push_back(static_cast<int64_t>(batch.ids.size()));
  }
  return batch;
}

std::vector<float> RandomUniform(int64_t n, float minval, float maxval,
                                 uint64_t seed) {
  InitializerSpec spec;
  spec.kind = InitializerSpec::Kind::kUniform;
  spec.minval = minval;
  spec.maxval = maxval;
  spec.seed = seed;
  std::vector<float> out(n);
  FillInitialValues(spec, 0, absl::MakeSpan(out));
  return out;
}

Batch RandomDenseBatch(std::vector<float> labels, int64_t num_dense,
                       uint64_t seed) {
  const int64_t size = static_cast<int64_t>(labels.size());
  Batch batch;
  batch.size = size;
  batch.labels = std::move(labels);
  batch.num_dense = num_dense;
  batch.dense = RandomUniform(size * num_dense, -1.0f, 1.0f, seed);
  batch.offsets.assign(size + 1, 0);
  return batch;
}

Batch RandomSparseBatch(std::vector<float> labels, int64_t num_features,
                        int max_features, uint64_t seed) {
  const int64_t size = static_cast<int64_t>(labels.size());
  const std::vector<float> counts =
      RandomUniform(size, 0.0f, max_features + 1.0f, seed);
  const std::vector<float> ids =
      RandomUniform(size * max_features, 0.0f, num_features, seed + 1);
  const std::vector<float> values =
      RandomUniform(size * max_features, -1.0f, 1.0f, seed + 2);
  std::vector<SparseFeatures> features(size);
  for (int64_t i = 0; i < size; ++i) {
    const int count = std::min(static_cast<int>(counts[i]), max_features);
    for (int k = 0; k < count; ++k) {
      const int64_t j = i * max_features + k;
      features[i].push_back({static_cast<int64_t>(ids[j]), values[j]});
    }
  }
  return SparseBatch(std::move(labels), features);
}

absl::StatusOr<std::vector<VariableSlice>> RandomValues(const Model& model,
                                                        const Batch& batch,
                                                        uint64_t seed,
                                                        float scale) {
  std::vector<std::vector<int64_t>> ids;
  RETURN_IF_ERROR(model.SparseIds(batch, &ids));
  const std::vector<ModelVariable>& variables = model.variables();
  std::vector<VariableSlice> values(variables.size());
  for (size_t v = 0; v < variables.size(); ++v) {
    const ModelVariable& variable = variables[v];
    const uint64_t variable_seed = seed * 1000 + v;
    if (variable.kind == ModelVariable::Kind::kDense) {
      values[v].dense =
          RandomUniform(NumRows(variable.spec) * variable.row_width(), -scale,
                        scale, variable_seed);
    } else {
      values[v].ids = ids[v];
      values[v].rows = RandomUniform(ids[v].size() * variable.row_width(),
                                     -scale, scale, variable_seed);
    }
  }
  return values;
}

std::vector<VariableSlice> NumericalGradients(
    const Model& model, const Batch& batch,
    const std::vector<VariableSlice>& values, float eps) {
  std::vector<VariableSlice> gradients(values.size());
  std::vector<VariableSlice> perturbed = values;
  for (size_t v = 0; v < values.size(); ++v) {
    gradients[v].ids = values[v].ids;
    std::vector<float>& out =
        values[v].dense.empty() ? gradients[v].rows : gradients[v].dense;
    std::vector<float>& elements = Elements(perturbed[v]);
    out.resize(elements.size());
    for (size_t e = 0; e < elements.size(); ++e) {
      const float original = elements[e];
      const float plus = original + eps;
      const float minus = original - eps;
      elements[e] = plus;
      const double loss_plus = Loss(model, batch, perturbed);
      elements[e] = minus;
      const double loss_minus = Loss(model, batch, perturbed);
      elements[e] = original;
      // Divided by the step actually taken in float.
      out[e] = static_cast<float>((loss_plus - loss_minus) /
                                  (static_cast<double>(plus) - minus));
    }
  }
  return gradients;
}

testing::AssertionResult GradientsNear(
    const std::vector<VariableSlice>& analytic,
    const std::vector<VariableSlice>& numerical, float atol, float rtol) {
  if (analytic.size() != numerical.size()) {
    return testing::AssertionFailure()
           << analytic.size() << " analytic gradients, " << numerical.size()
           << " numerical";
  }
  std::string mismatches;
  int num_mismatches = 0;
  for (size_t v = 0; v < analytic.size(); ++v) {
    if (analytic[v].ids != numerical[v].ids ||
        analytic[v].dense.size() != numerical[v].dense.size() ||
        analytic[v].rows.size() != numerical[v].rows.size()) {
      return testing::AssertionFailure()
             << "variable " << v << ": gradient layouts differ";
    }
    const std::vector<float>& a = Elements(analytic[v]);
    const std::vector<float>& n = Elements(numerical[v]);
    for (size_t e = 0; e < a.size(); ++e) {
      if (!(std::fabs(a[e] - n[e]) <= atol + rtol * std::fabs(n[e]))) {
        if (++num_mismatches <= 5) {
          absl::StrAppend(&mismatches, "\n  variable ", v, " element ", e,
                          ": analytic ", a[e], ", numerical ", n[e]);
        }
      }
    }
  }
  if (num_mismatches > 0) {
    return testing::AssertionFailure()
           << num_mismatches << " gradient elements differ:" << mismatches;
  }
  return testing::AssertionSuccess();
}

void ExpectGradientsMatchNumerical(const Model& model, const Batch& batch,
                                   const std::vector<VariableSlice>& values,
                                   float eps, float atol, float rtol) {
  ModelStepResult result;
  const absl::Status status =
      model.Compute(batch, values, /*with_gradients=*/true, &result);
  ASSERT_TRUE(status.ok()) << status;
  const std::vector<VariableSlice> numerical =
      NumericalGradients(model, batch, values, eps);
  EXPECT_TRUE(GradientsNear(result.gradients, numerical, atol, rtol));

  // The check must be able to fail: a gradient halved or negated in any one
  // variable is noticed.
  for (size_t v = 0; v < values.size(); ++v) {
    for (float factor : {0.5f, -1.0f}) {
      std::vector<VariableSlice> wrong = result.gradients;
      for (float& g : Elements(wrong[v])) g *= factor;
      EXPECT_FALSE(GradientsNear(wrong, numerical, atol, rtol))
          << "variable " << model.variables()[v].name() << " times " << factor;
    }
  }
}

}  // namespace distrt
