#ifndef DISTRT_RUNTIME_MODELS_MODEL_REGISTRY_H_
#define DISTRT_RUNTIME_MODELS_MODEL_REGISTRY_H_

// ModelRegistry: every model a job can name with --model, by name. It
// starts with the built-in models (linear, logreg, mlp, wide_deep);
// //runtime/torchscript:torchscript_model adds "torchscript". A C++ user
// adds a model of their own from a cc_library of theirs, with no change to
// this project's files:
//
//   // my_model.cc, in cc_library(name = "my_model", alwayslink = True, ...)
//   DISTRT_REGISTER_MODEL("my_model", [](const distrt::ModelConfig& config)
//       -> absl::StatusOr<std::unique_ptr<distrt::Model>> {
//     return std::make_unique<MyModel>(config.num_features);
//   });
//
//   # BUILD: their own build of the worker, which then takes --model=my_model
//   cc_binary(name = "my_worker",
//             deps = ["@distrt//worker:worker_main", ":my_model"])
//
// alwayslink keeps the registration, which nothing else references, in the
// binary. docs/library.md shows it whole.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/models/model.h"
#include "runtime/models/model_config.h"

namespace distrt {

class ModelRegistry {
 public:
  // Makes the model `config` asks for (config.name is the registered name);
  // INVALID_ARGUMENT naming the field for a config it cannot take.
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Model>>(
      const ModelConfig& config)>;

  // The process's registry, with the built-in models in it.
  static ModelRegistry& Global();

  // ALREADY_EXISTS when `name` is taken; INVALID_ARGUMENT for an empty name
  // or factory.
  absl::Status Register(const std::string& name, Factory factory)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The model config.name names; INVALID_ARGUMENT listing the registered
  // names when none has it, or what the factory says.
  absl::StatusOr<std::unique_ptr<Model>> Create(const ModelConfig& config) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Sorted.
  std::vector<std::string> Names() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, Factory> factories_ ABSL_GUARDED_BY(mu_);
};

// Registers in ModelRegistry::Global() at static initialisation; a name
// registered twice in one program is a bug in how it was linked, reported
// on stderr before the program aborts. Returns true (for the macro).
bool RegisterModelAtStartup(const std::string& name,
                            ModelRegistry::Factory factory);

#define DISTRT_REGISTER_MODEL_CONCAT_(a, b) a##b
#define DISTRT_REGISTER_MODEL_NAME_(line) \
  DISTRT_REGISTER_MODEL_CONCAT_(distrt_registered_model_, line)
// DISTRT_REGISTER_MODEL("name", factory): at namespace scope in a .cc file.
#define DISTRT_REGISTER_MODEL(name, factory)                \
  static const bool DISTRT_REGISTER_MODEL_NAME_(__LINE__) = \
      ::distrt::RegisterModelAtStartup(name, factory)

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_MODEL_REGISTRY_H_
