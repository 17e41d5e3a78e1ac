#ifndef DISTRT_RUNTIME_MODELS_MODEL_CONFIG_H_
#define DISTRT_RUNTIME_MODELS_MODEL_CONFIG_H_

// ModelConfig and CreateModel: the built-in models by name. Every worker
// builds its model from the same config, and the same config always gives
// the same variable specs (names, shapes, initializers and their seeds), so
// parameter servers see one set of variables however many workers create
// them.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/input/feature_spec.h"
#include "runtime/models/model.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/placement.h"

namespace distrt {

struct ModelConfig {
  // A name in ModelRegistry: one of ModelNames() ("linear", "logreg",
  // "mlp", "wide_deep"), "torchscript", or a model a program registered.
  std::string name;
  // Dense features per example (linear, mlp), or the size of the sparse
  // feature id space (logreg, wide_deep): ids are in [0, num_features).
  int64_t num_features = 0;
  // mlp only.
  int num_classes = 2;
  // Hidden layer widths, input side first (mlp, wide_deep); may be empty.
  std::vector<int> hidden_units;
  // wide_deep only: values per embedding row, in [1, 2^20].
  int64_t embedding_dim = 8;
  // Applied to every variable of the model.
  OptimizerConfig optimizer;
  // Initializer seeds derive from it and each variable's index.
  uint64_t seed = 0;
  // Of the row-sparse variables (logreg, wide_deep) on ps tasks: shards of at
  // least 256 KiB, as many as that allows (a ps task holds at most one).
  PartitionPolicy partition =
      PartitionPolicy::MinSize(256 << 10, /*max_shards=*/0);
  // name "torchscript" (a user's module, loaded by runtime/torchscript
  // rather than CreateModel): its file and loss; num_classes is then its
  // outputs per example.
  std::string torchscript_file;
  std::string loss;
  // For a model computing with a thread pool of its own (TorchScript): the
  // threads each replica may use; 0 leaves the pool's default.
  int threads_per_replica = 0;
  // The named features the data is read with (--features), for models that
  // take them (wide_deep, torchscript): Example::dense is the spec's
  // numeric features and Example::groups its embedding groups, one table
  // each. Null: no spec (LIBSVM ids, CSV columns).
  std::shared_ptr<const FeatureSpec> feature_spec;
};

// The names CreateModel knows, sorted: the built-in models. ModelRegistry
// (model_registry.h) holds them and every other model a job can name.
std::vector<std::string> ModelNames();

// The model `config` names. Fields a model does not use are ignored.
// INVALID_ARGUMENT naming the field for a bad value: an unknown name (listing
// the known ones), num_features < 1, num_classes < 2 (mlp), a hidden unit
// count < 1 (mlp, wide_deep), embedding_dim outside [1, 2^20] (wide_deep), an
// invalid optimizer or partition, or variables too large.
absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_MODEL_CONFIG_H_
