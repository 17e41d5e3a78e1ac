#include "runtime/models/model_variables.h"

#include <cmath>
#include <utility>

#include "runtime/util/splitmix64.h"

namespace distrt {
namespace {}  // namespace

uint64_t VariableSeed(uint64_t model_seed, int index) {
  return SplitMix64(SplitMix64(model_seed) ^ static_cast<uint64_t>(index));
}

void SeedInitializers(uint64_t model_seed,
                      std::vector<ModelVariable>* variables) {
  for (size_t i = 0; i < variables->size(); ++i) {
    ModelVariable& variable = (*variables)[i];
    InitializerSpec& initializer =
        variable.kind == ModelVariable::Kind::kHashEmbedding
            ? variable.hash_spec.initializer
            : variable.spec.initializer;
    initializer.seed = VariableSeed(model_seed, static_cast<int>(i));
  }
}

InitializerSpec ZerosInitializer() { return InitializerSpec(); }

InitializerSpec UniformInitializer(float minval, float maxval) {
  InitializerSpec spec;
  spec.kind = InitializerSpec::Kind::kUniform;
  spec.minval = minval;
  spec.maxval = maxval;
  return spec;
}

InitializerSpec GlorotUniformInitializer(int64_t fan_in, int64_t fan_out) {
  const float limit = static_cast<float>(
      std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
  return UniformInitializer(-limit, limit);
}

ModelVariable DenseVariable(std::string name, std::vector<int64_t> shape,
                            const InitializerSpec& initializer,
                            const ModelVariableOptions& options) {
  ModelVariable variable;
  variable.kind = ModelVariable::Kind::kDense;
  variable.spec.name = std::move(name);
  variable.spec.shape = std::move(shape);
  variable.spec.initializer = initializer;
  variable.spec.optimizer = options.optimizer;
  return variable;
}

ModelVariable RowSparseVariable(std::string name, std::vector<int64_t> shape,
                                const InitializerSpec& initializer,
                                const ModelVariableOptions& options) {
  ModelVariable variable =
      DenseVariable(std::move(name), std::move(shape), initializer, options);
  variable.kind = ModelVariable::Kind::kRowSparse;
  variable.partition = options.partition;
  return variable;
}

ModelVariable HashEmbeddingVariable(std::string name, int64_t dim,
                                    const InitializerSpec& initializer,
                                    const ModelVariableOptions& options) {
  ModelVariable variable;
  variable.kind = ModelVariable::Kind::kHashEmbedding;
  variable.hash_spec.name = std::move(name);
  variable.hash_spec.dim = dim;
  variable.hash_spec.initializer = initializer;
  variable.hash_spec.optimizer = options.optimizer;
  return variable;
}

}  // namespace distrt
