#include "runtime/models/model_registry.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distrt {

ModelRegistry& ModelRegistry::Global() {
  static ModelRegistry* const registry = [] {
    auto* r = new ModelRegistry;
    for (const std::string& name : ModelNames()) {
      // CreateModel knows each built-in by its config's name.
      (void)r->Register(name, &CreateModel);
    }
    return r;
  }();
  return *registry;
}

absl::Status ModelRegistry::Register(const std::string& name, Factory factory) {
  if (name.empty() || !factory) {
    return absl::InvalidArgumentError(
        "a model is registered with a name and a factory");
  }
  absl::MutexLock lock(&mu_);
  if (!factories_.emplace(name, std::move(factory)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("a model named \"", name, "\" is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> ModelRegistry::Create(
    const ModelConfig& config) const {
  Factory factory;
  {
    absl::MutexLock lock(&mu_);
    auto it = factories_.find(config.name);
    if (it != factories_.end()) factory = it->second;
  }
  if (!factory) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: unknown model name \"", config.name,
                     "\"; known: ", absl::StrJoin(Names(), ", ")));
  }
  // Outside the lock: a factory may take its time (loading a file).
  absl::StatusOr<std::unique_ptr<Model>> model = factory(config);
  if (model.ok() && *model == nullptr) {
    return absl::InternalError(absl::StrCat(
        "the factory of model \"", config.name, "\" returned no model"));
  }
  return model;
}

std::vector<std::string> ModelRegistry::Names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

bool RegisterModelAtStartup(const std::string& name,
                            ModelRegistry::Factory factory) {
  absl::Status s = ModelRegistry::Global().Register(name, std::move(factory));
  if (!s.ok()) {
    std::fprintf(stderr, "distrt: registering model \"%s\": %s\n", name.c_str(),
                 std::string(s.message()).c_str());
    std::abort();
  }
  return true;
}

}  // namespace distrt
