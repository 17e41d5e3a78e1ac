#ifndef DISTRT_RUNTIME_TRAINING_MODEL_VARIABLES_H_
#define DISTRT_RUNTIME_TRAINING_MODEL_VARIABLES_H_

// ModelVariables: a model's variables created under a strategy, in the
// model's order, and the global step. Dense and row-sparse variables are
// sync-on-write with SUM aggregation (gradients add up over replicas); hash
// embeddings are the strategy's hash tables; the global step is an int64
// scalar with ONLY_FIRST_REPLICA aggregation, so it counts steps of the
// worker, not of its replicas.
//
// Every worker creates them in the same order, which is what makes
// parameter-server placement agree across workers.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/distribute/strategy.h"
#include "runtime/models/model.h"

namespace distrt {

inline constexpr char kGlobalStepName[] = "global_step";

class ModelVariables {
 public:
  // Creates (or finds, when they exist with the same specs) the variables.
  static absl::StatusOr<ModelVariables> Create(Strategy& strategy,
                                               const Model& model);
  // The variables and hash tables a program created itself (with
  // Strategy::CreateVariable / CreateHashTable, no Model), with the global
  // step (created, or found), so that checkpoints (model_state.h,
  // distribute/checkpoint_manager.h) and broadcasts take them as they take
  // a model's. Variables come first, then tables; none may be null.
  static absl::StatusOr<ModelVariables> FromVariables(
      Strategy& strategy, std::vector<DistributedVariable*> variables,
      std::vector<DistributedHashTable*> hash_tables = {});

  // Index-aligned with model.variables(): the variable (dense, row-sparse)
  // or the hash table (hash embedding); the other is null.
  DistributedVariable* variable(int i) const { return variables_[i]; }
  DistributedHashTable* hash_table(int i) const { return hash_tables_[i]; }
  int size() const { return static_cast<int>(variables_.size()); }
  DistributedVariable& global_step() const { return *global_step_; }

  // Assigns the values the model gives its variables to start from
  // (ModelVariable::initial_values, e.g. a TorchScript module's saved
  // parameters), in cross-replica context: the chief does, after creating
  // the variables, unless it restored a checkpoint or the global step is
  // past 0 (the variables on the ps tasks were trained already). Variables
  // without them keep their initializer's values. `model` is the one Create was
  // given.
  absl::Status AssignInitialValues(Strategy& strategy,
                                   const Model& model) const;

  // The global step's value, in cross-replica context.
  absl::StatusOr<int64_t> ReadGlobalStep(Strategy& strategy) const;

  // One line per variable of `model` (the one Create was given): name,
  // shape and placement, for the log.
  std::vector<std::string> Describe(const Model& model) const;

 private:
  std::vector<DistributedVariable*> variables_;
  std::vector<DistributedHashTable*> hash_tables_;
  DistributedVariable* global_step_ = nullptr;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_MODEL_VARIABLES_H_
