// A small model with every kind of state a ps task holds, for tests that
// save, restore or damage checkpoints of real ps_server processes and must
// show that what the tasks hold is exactly what it was.
#ifndef DISTRT_TESTS_UTIL_CHECKPOINT_MODEL_H_
#define DISTRT_TESTS_UTIL_CHECKPOINT_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "client/ps_client.h"
#include "tests/util/ps_processes.h"

namespace distrt::testing {

// "emb": a 9x3 embedding partitioned by rows, with Adam slots; "bias": a
// vector with Nesterov momentum; an int64 "global_step"; and "ids", a hash
// table of 2-wide rows with FTRL slots.
struct CheckpointModel {
  std::vector<VariablePlacement> dense;  // emb, bias
  VariablePlacement global_step;
  HashEmbeddingSpec table;
};

// The ids of the hash table rows that TrainCheckpointModel updates.
const std::vector<int64_t>& CheckpointModelHashIds();

// Creates the model on the client's ps tasks, "emb" in `embedding_parts`
// parts. Failures are reported as gtest failures.
CheckpointModel CreateCheckpointModel(PsClient& client, int embedding_parts);

// One training step's updates (dense, sparse and hash pushes and a step),
// with gradients that depend on `seed`.
void TrainCheckpointModel(PsClient& client, const CheckpointModel& model,
                          int seed);

// Everything the ps tasks hold of the model, as it was pulled.
struct ModelSnapshot {
  std::vector<std::vector<float>> dense;
  std::vector<float> hash_rows;
  int64_t global_step = 0;

  // Compares bits, so that a NaN equals itself and -0 differs from 0.
  bool BitwiseEquals(const ModelSnapshot& other) const;
};

ModelSnapshot PullModel(PsClient& client, const CheckpointModel& model);

// A client of `tasks` with 30 s timeouts; null (and a gtest failure) when
// it cannot be made.
std::unique_ptr<PsClient> ClientOf(const std::vector<PsProcess>& tasks);

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_CHECKPOINT_MODEL_H_
