#ifndef DISTRT_FUZZ_CHECKPOINT_FUZZ_UTIL_H_
#define DISTRT_FUZZ_CHECKPOINT_FUZZ_UTIL_H_

// What the checkpoint fuzz targets share: the model whose checkpoints their
// seed corpora hold (so that a restore into it gets past the spec checks to
// the tensors), a check that two holdings are the same, and a fix-up of a
// shard file's checksums (so that mutated headers and data reach the code
// behind the CRC32C checks).

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/ps/variable_store.h"

namespace distrt::fuzz {

// The model's variables, every kind a checkpoint holds:
//   "dense"        float32 [4, 3], Adam (two slots)
//   "emb"          float32 [10, 2], Adagrad; often partitioned by rows
//   "bias"         float32 [3], Momentum
//   "ftrl_w"       float32 [2, 2], FTRL (two slots)
//   "global_step"  int64 [1]
// and hash embedding tables "users" (dim 3, FTRL) and "items" (dim 2, SGD).
std::vector<VariableSpec> FuzzModelVariables();
std::vector<HashEmbeddingSpec> FuzzModelTables();

// Creates the model in `store` and `tables`, holding rows `emb_rows` of
// "emb" and all rows of the others. Aborts if that fails (it cannot, on
// empty holdings).
void CreateFuzzModel(VariableStore& store, HashTableSet& tables,
                     RowRange emb_rows = {0, 10});

// Empty when `a` and `b` hold the same variables and tables with the same
// states (bit for bit); otherwise what differs first.
std::string DescribeHoldingsDifference(const VariableStore& a_store,
                                       const HashTableSet& a_tables,
                                       const VariableStore& b_store,
                                       const HashTableSet& b_tables);

// `file` (a shard file, or anything) with correct checksums where they can
// be told: when the header parses, every SavedTensor that lies within the
// data section gets the CRC32C of its bytes and the header is written again
// (with its new length); the header's CRC32C always matches the header
// bytes. Input too short for a preamble, or whose header length runs past
// the end, comes back unchanged.
std::string FixShardChecksums(absl::string_view file);

}  // namespace distrt::fuzz

#endif  // DISTRT_FUZZ_CHECKPOINT_FUZZ_UTIL_H_
