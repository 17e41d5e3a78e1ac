#ifndef DISTRT_RUNTIME_MODELS_MODEL_VARIABLES_H_
#define DISTRT_RUNTIME_MODELS_MODEL_VARIABLES_H_

// How the built-in models declare their variables: the settings every
// variable of a model shares, the seed each variable's initializer gets, and
// builders for the three kinds of ModelVariable.
//
// Every worker builds its model from the same configuration and must end up
// with field-for-field identical specs (parameter servers compare them), so
// nothing here depends on anything but its arguments.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/models/model.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/initializer.h"
#include "runtime/ps/placement.h"

namespace distrt {

// What all variables of one model share.
struct ModelVariableOptions {
  OptimizerConfig optimizer;
  // For kRowSparse variables.
  PartitionPolicy partition;
  // The model's seed; SeedInitializers derives each variable's from it.
  uint64_t seed = 0;
};

// The initializer seed of a model's `index`-th variable: a mix of both, so
// that variables with the same initializer (two hidden layers of one width)
// still start differently, and models with different seeds differ everywhere.
uint64_t VariableSeed(uint64_t model_seed, int index);

// Sets the initializer seed of every variable to VariableSeed(model_seed,
// its index): what a model does once it has declared all its variables.
void SeedInitializers(uint64_t model_seed,
                      std::vector<ModelVariable>* variables);

// Initializers, their seeds left to SeedInitializers.
InitializerSpec ZerosInitializer();
// Uniform in [minval, maxval).
InitializerSpec UniformInitializer(float minval, float maxval);
// Glorot (Xavier) uniform, Keras' default for Dense kernels: uniform in
// [-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)).
InitializerSpec GlorotUniformInitializer(int64_t fan_in, int64_t fan_out);

ModelVariable DenseVariable(std::string name, std::vector<int64_t> shape,
                            const InitializerSpec& initializer,
                            const ModelVariableOptions& options);
// Partitioned by rows with options.partition.
ModelVariable RowSparseVariable(std::string name, std::vector<int64_t> shape,
                                const InitializerSpec& initializer,
                                const ModelVariableOptions& options);
ModelVariable HashEmbeddingVariable(std::string name, int64_t dim,
                                    const InitializerSpec& initializer,
                                    const ModelVariableOptions& options);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_MODEL_VARIABLES_H_
