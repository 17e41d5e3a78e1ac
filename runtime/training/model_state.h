#ifndef DISTRT_RUNTIME_TRAINING_MODEL_STATE_H_
#define DISTRT_RUNTIME_TRAINING_MODEL_STATE_H_

// The whole training state of a model whose variables live in this process
// (MirroredStrategy, MultiWorkerMirroredStrategy and the other local
// strategies): every variable's values, its optimizer slots and step, every
// hash table's rows, and the global step. Two things move it:
//
//  * Checkpoints. With no parameter servers there is no ps task to save the
//    variables, so the chief worker saves them itself, as shard 0 of 1 of a
//    checkpoint in the ps tasks' format (runtime/checkpoint/ps_checkpoint.h,
//    docs/checkpoint_format.md). The evaluator, a restore by ps tasks, and a
//    restore here all read it unchanged; a checkpoint written by any number
//    of ps tasks restores here too.
//  * Broadcast. Mirrors on different workers stay identical only if they
//    start identical: every worker applies the same all-reduced update to
//    its own copies. Initial values are a function of the seed, but a
//    restored checkpoint or a worker that joins later is not, so the chief
//    restores (or initialises) and then broadcasts its state to every other
//    worker before the first step, as TensorFlow's
//    MultiWorkerMirroredStrategy broadcasts initial values from the chief.
//
// Only copy 0 of each variable is read (mirrors are identical between
// steps), and every copy is written. All of it must run between steps, when
// no replica updates the variables: each variable is exported and imported
// atomically, but different variables one after another.
//
// Under ParameterServerStrategy the variables cannot export or import their
// state (the ps tasks checkpoint them; see PsClient::Save), and everything
// here returns UNIMPLEMENTED naming the first variable (or, on the
// non-root ranks of a broadcast, saying that the root could not export).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/collective/cross_worker_collective.h"
#include "runtime/training/model_variables.h"

namespace distrt {

struct ModelCheckpointSaved {
  std::string checkpoint;  // the committed checkpoint directory
  int64_t bytes = 0;       // the size of its one shard file
  // Older checkpoints deleted because of keep_last, and the ones that could
  // not be (one message each; the save itself succeeded, and the next one
  // tries again).
  std::vector<std::string> deleted;
  std::vector<std::string> cleanup_errors;
};

// Saves the state of `variables` as the checkpoint of `step` under
// `root_dir` (<root_dir>/ckpt-<step>/shard-00000-of-00001.ckpt) and commits
// it as the latest, keeping the newest `keep_last` committed checkpoints (0
// keeps all). Memory: about two extra copies of the model (one gathered
// here, and the one SaveShard writes from).
//
// INVALID_ARGUMENT for an empty root_dir, step < 0 or keep_last < 0; the
// errors of ExportState (UNIMPLEMENTED for variables on parameter servers),
// and of SaveShard and CommitCheckpoint, which name the files.
absl::StatusOr<ModelCheckpointSaved> SaveModelCheckpoint(
    const ModelVariables& variables, const std::string& root_dir, int64_t step,
    int keep_last);

struct ModelCheckpointRestored {
  std::string checkpoint;  // the checkpoint directory restored
  int64_t step = 0;        // the step it was saved at
};

// Restores `variables` (every copy) from the checkpoint `dir` designates: a
// ckpt-<step> directory, or a root directory whose latest committed
// checkpoint is used. The checkpoint may have been written by
// SaveModelCheckpoint or by any number of ps tasks; variables and tables in
// it that the model lacks are ignored.
//
// All or nothing: the checkpoint is read and verified in full before any
// variable changes. Its errors pass through from RestoreShard and name the
// file or variable: NOT_FOUND for no checkpoint in `dir` or a variable or
// table missing from it, FAILED_PRECONDITION for one whose spec differs
// (shape, optimizer, ...), DATA_LOSS for a damaged file. UNIMPLEMENTED for
// variables on parameter servers, before anything changed. Memory: about
// two extra copies of the model (one to restore into, and the one
// RestoreShard verifies before swapping it in).
absl::StatusOr<ModelCheckpointRestored> RestoreModelCheckpoint(
    const ModelVariables& variables, const std::string& dir);

// Makes the state of `variables` on every rank of `workers` that of rank
// `root`'s: the root exports copy 0 of each variable and table, the others
// import it into all their copies. Every rank calls it, with the same root,
// as a collective; each rank's `variables` are those of the same model.
//
// Four collectives, whatever the model: the root broadcasts a fixed-size
// header (format version, counts and buffer sizes, whether its export
// worked), then one int64 buffer (a description of each variable and table,
// steps, int64 values, hash ids and row steps); every rank compares the
// description with its own model, and the ranks all-reduce whether they
// agree; only then does the root broadcast one float32 buffer (values,
// slots, hash rows). Memory: one extra copy of the model, plus one
// variable's state.
//
// Errors are the same on every rank, so that none goes on to the next
// collective alone:
//  * the root's export fails: the root returns its error, the others the
//    same code saying that rank <root> could not export its state;
//  * a rank's model differs from the root's (number of variables or
//    tables, a name, kind, shape, dim or optimizer): that rank returns
//    FAILED_PRECONDITION "rank <r>'s model differs from rank <root>'s: "
//    naming what differs, every other rank FAILED_PRECONDITION naming the
//    rank(s) that differ;
// and then nothing has changed on any rank. (INTERNAL instead, on the rank
// that finds it, for a root's message that contradicts itself.) A collective's
// own error (a rank that died or timed out) keeps its code; if it happens
// during the float32 broadcast, non-root ranks are unchanged too.
// INVALID_ARGUMENT unless 0 <= root < workers.size(), before any collective.
absl::Status BroadcastModelState(CrossWorkerCollective& workers,
                                 const ModelVariables& variables, int root);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_MODEL_STATE_H_
