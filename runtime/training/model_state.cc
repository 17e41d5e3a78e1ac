#include "runtime/training/model_state.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/distribute/variable.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/ps/variable_store.h"
#include "runtime/tensor/dtype.h"
#include "runtime/util/crc32c.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// One thing whose state moves: the global step, or one of the model's
// variables (a variable or a hash table; exactly one is set).
struct Entry {
  DistributedVariable* variable = nullptr;
  DistributedHashTable* table = nullptr;

  const std::string& name() const {
    return variable != nullptr ? variable->name() : table->spec().name;
  }
  // `variable "w"` or `hash table "emb"`, for messages.
  std::string Describe() const {
    return absl::StrCat(variable != nullptr ? "variable" : "hash table", " \"",
                        name(), "\"");
  }
};

// The global step first, then the model's variables in model order: the
// order in which every rank, and a checkpoint, sees them.
std::vector<Entry> EntriesOf(const ModelVariables& variables) {
  std::vector<Entry> entries;
  entries.push_back({&variables.global_step(), nullptr});
  for (int i = 0; i < variables.size(); ++i) {
    entries.push_back({variables.variable(i), variables.hash_table(i)});
  }
  return entries;
}

RowRange AllRows(const VariableSpec& spec) { return {0, NumRows(spec)}; }

int64_t NumElements(const VariableSpec& spec) {
  return NumRows(spec) * RowWidth(spec);
}

int64_t NumSlots(const OptimizerConfig& optimizer) {
  return static_cast<int64_t>(SlotNames(optimizer.kind).size());
}

// Creates every entry in `store` / `tables` as a ps task would hold it
// whole, with its initial values.
absl::Status CreateLike(const std::vector<Entry>& entries, VariableStore& store,
                        HashTableSet& tables) {
  for (const Entry& e : entries) {
    if (e.variable != nullptr) {
      const VariableSpec& spec = e.variable->spec();
      RETURN_IF_ERROR(store.Create(spec, AllRows(spec)).status());
    } else {
      RETURN_IF_ERROR(tables.Create(e.table->spec()).status());
    }
  }
  return absl::OkStatus();
}

// --- BroadcastModelState's messages -------------------------------------
//
// The root broadcasts, in this order:
//
//  1. the header: kHeaderSize int64s. Its size and fields never change, so
//     ranks of different versions still meet in the same broadcast and can
//     tell; kStateFormatVersion covers the layout of the two buffers.
//  2. the int64 buffer: a descriptor (kDescriptorSize int64s) of each entry
//     in entry order, then per entry: a variable's step, followed for an
//     int64 variable by its values; a hash table's ids, then its row steps.
//  3. the float32 buffer, per entry: a float32 variable's values, then each
//     slot (SlotNames order); a hash table's rows, then each slot's rows.
//     Int64 variables have nothing here.

constexpr int64_t kStateFormatVersion = 1;

enum HeaderField {
  kVersion,
  // 0, or the absl::StatusCode of the root's failed export (then nothing
  // else follows).
  kRootError,
  kNumVariables,  // with the global step
  kNumTables,
  kIntsSize,
  kFloatsSize,
  kHeaderSize,
};

enum DescriptorField {
  kKind,
  kNameFingerprint,
  kRows,  // of a hash table: the rows the root has
  kWidth,
  kOptimizerKind,
  kOptimizerFingerprint,
  kDescriptorSize,
};

enum EntryKind : int64_t {
  kFloatVariable = 1,
  kInt64Variable = 2,
  kHashTable = 3,
};

absl::string_view EntryKindName(int64_t kind) {
  switch (kind) {
    case kFloatVariable:
      return "a float32 variable";
    case kInt64Variable:
      return "an int64 variable";
    case kHashTable:
      return "a hash table";
  }
  return "of an unknown kind";
}

std::string OptimizerNameOf(int64_t kind) {
  if (kind < 0 || kind > static_cast<int64_t>(OptimizerKind::kFtrl)) {
    return absl::StrCat("optimizer #", kind);
  }
  return std::string(OptimizerName(static_cast<OptimizerKind>(kind)));
}

// The checkpoints' CRC32C: the same in every process and on every machine,
// unlike absl::Hash, which is seeded per process. It only has to tell
// workers started with different flags apart.
int64_t Fingerprint(absl::string_view bytes) { return Crc32c(bytes); }

// Of every hyper-parameter, by its bits (as decimal text, so that byte
// order does not matter): workers whose optimizers differ in any of them
// would apply different updates to mirrors that must stay identical.
int64_t OptimizerFingerprint(const OptimizerConfig& c) {
  auto bits = [](float f) { return absl::bit_cast<uint32_t>(f); };
  return Fingerprint(absl::StrCat(
      static_cast<int>(c.kind), ",", bits(c.learning_rate), ",",
      bits(c.momentum), ",", c.nesterov ? 1 : 0, ",",
      bits(c.initial_accumulator_value), ",", bits(c.epsilon), ",",
      bits(c.beta1), ",", bits(c.beta2), ",", bits(c.learning_rate_power), ",",
      bits(c.l1_regularization), ",", bits(c.l2_regularization)));
}

// The descriptor of `e` on this rank; `table_rows` is what a hash table's
// kRows says (the rows are the root's, not part of the model).
std::array<int64_t, kDescriptorSize> DescriptorOf(const Entry& e,
                                                  int64_t table_rows) {
  std::array<int64_t, kDescriptorSize> d{};
  d[kNameFingerprint] = Fingerprint(e.name());
  if (e.variable != nullptr) {
    const VariableSpec& spec = e.variable->spec();
    d[kRows] = NumRows(spec);
    d[kWidth] = RowWidth(spec);
    if (spec.dtype == DType::kInt64) {
      // Int64 pushes are added; there is no optimizer to agree on.
      d[kKind] = kInt64Variable;
    } else {
      d[kKind] = kFloatVariable;
      d[kOptimizerKind] = static_cast<int64_t>(spec.optimizer.kind);
      d[kOptimizerFingerprint] = OptimizerFingerprint(spec.optimizer);
    }
  } else {
    const HashEmbeddingSpec& spec = e.table->spec();
    d[kKind] = kHashTable;
    d[kRows] = table_rows;
    d[kWidth] = spec.dim;
    d[kOptimizerKind] = static_cast<int64_t>(spec.optimizer.kind);
    d[kOptimizerFingerprint] = OptimizerFingerprint(spec.optimizer);
  }
  return d;
}

// Empty when this rank's entry `index` (`mine`) is what the root described
// as `theirs`; otherwise what differs.
std::string DescribeDifference(int index, const Entry& mine,
                               absl::Span<const int64_t> theirs, int root) {
  const std::array<int64_t, kDescriptorSize> own = DescriptorOf(mine, 0);
  const std::string on_root = absl::StrCat("on rank ", root);
  if (own[kKind] != theirs[kKind] ||
      own[kNameFingerprint] != theirs[kNameFingerprint]) {
    const std::string where =
        index == 0 ? std::string("the global step")
                   : absl::StrCat("the model's variable ", index - 1);
    if (own[kKind] != theirs[kKind]) {
      return absl::StrCat(where, " is ", EntryKindName(own[kKind]), " (\"",
                          mine.name(), "\") here, ",
                          EntryKindName(theirs[kKind]), " ", on_root);
    }
    return absl::StrCat(where, " is \"", mine.name(),
                        "\" here and has another name ", on_root);
  }
  if (own[kKind] == kHashTable) {
    if (own[kWidth] != theirs[kWidth]) {
      return absl::StrCat(mine.Describe(), " has dim ", own[kWidth], " here, ",
                          theirs[kWidth], " ", on_root);
    }
  } else if (own[kRows] != theirs[kRows] || own[kWidth] != theirs[kWidth]) {
    return absl::StrCat(mine.Describe(), " has ", own[kRows], " rows of ",
                        own[kWidth], " here, ", theirs[kRows], " rows of ",
                        theirs[kWidth], " ", on_root);
  }
  if (own[kOptimizerKind] != theirs[kOptimizerKind]) {
    return absl::StrCat(mine.Describe(), " is trained with ",
                        OptimizerNameOf(own[kOptimizerKind]), " here, ",
                        OptimizerNameOf(theirs[kOptimizerKind]), " ", on_root);
  }
  if (own[kOptimizerFingerprint] != theirs[kOptimizerFingerprint]) {
    return absl::StrCat(mine.Describe(), "'s optimizer (",
                        OptimizerNameOf(own[kOptimizerKind]),
                        ") has other hyper-parameters here than ", on_root);
  }
  return "";
}

// The root's state in the two buffers.
struct StateBuffers {
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

template <typename T>
void Append(const std::vector<T>& from, std::vector<T>& to) {
  to.insert(to.end(), from.begin(), from.end());
}

// Exports copy 0 of every entry into `out`, one entry at a time so that
// only one exported state exists beside the buffers.
absl::Status ExportAll(const std::vector<Entry>& entries, StateBuffers& out) {
  out.ints.assign(entries.size() * kDescriptorSize, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    int64_t table_rows = 0;
    if (e.variable != nullptr) {
      ASSIGN_OR_RETURN(VariableState state, e.variable->ExportState(0));
      out.ints.push_back(state.step);
      Append(state.ints, out.ints);
      Append(state.values, out.floats);
      for (const std::vector<float>& slot : state.slots) {
        Append(slot, out.floats);
      }
    } else {
      ASSIGN_OR_RETURN(HashTableState state, e.table->ExportState());
      table_rows = static_cast<int64_t>(state.ids.size());
      Append(state.ids, out.ints);
      Append(state.steps, out.ints);
      Append(state.values, out.floats);
      for (const std::vector<float>& slot : state.slots) {
        Append(slot, out.floats);
      }
    }
    const std::array<int64_t, kDescriptorSize> d = DescriptorOf(e, table_rows);
    std::copy(d.begin(), d.end(), out.ints.begin() + i * kDescriptorSize);
  }
  return absl::OkStatus();
}

// On a non-root rank: OK when the root's header and descriptors (the start
// of `ints`) describe this rank's model, so that the buffers can be
// imported; FAILED_PRECONDITION naming what differs otherwise.
absl::Status CheckAgainstRoot(const std::vector<Entry>& entries,
                              absl::Span<const int64_t> header,
                              absl::Span<const int64_t> ints, int rank,
                              int root) {
  if (header[kVersion] != kStateFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", rank, " cannot read the model state of rank ",
                     root, ": it is in format version ", header[kVersion],
                     ", this worker reads version ", kStateFormatVersion));
  }
  const std::string differs =
      absl::StrCat("rank ", rank, "'s model differs from rank ", root, "'s: ");
  int64_t num_variables = 0;
  int64_t num_tables = 0;
  for (const Entry& e : entries) {
    if (e.variable != nullptr) {
      ++num_variables;
    } else {
      ++num_tables;
    }
  }
  if (num_variables != header[kNumVariables] ||
      num_tables != header[kNumTables]) {
    return absl::FailedPreconditionError(absl::StrCat(
        differs, "numbers of variables and hash tables: ", num_variables,
        " and ", num_tables, " here (with the global step), ",
        header[kNumVariables], " and ", header[kNumTables], " on rank ", root));
  }
  const size_t descriptors = entries.size() * kDescriptorSize;
  if (ints.size() < descriptors) {
    return absl::InternalError(absl::StrCat(
        "the model state of rank ", root, " is inconsistent: ", ints.size(),
        " int64 values cannot describe ", entries.size(),
        " variables and tables"));
  }
  // What the buffers must hold for this model with the root's table rows.
  int64_t want_ints = static_cast<int64_t>(descriptors);
  int64_t want_floats = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    absl::Span<const int64_t> theirs =
        ints.subspan(i * kDescriptorSize, kDescriptorSize);
    const std::string difference =
        DescribeDifference(static_cast<int>(i), e, theirs, root);
    if (!difference.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(differs, difference));
    }
    if (e.variable != nullptr) {
      const VariableSpec& spec = e.variable->spec();
      if (spec.dtype == DType::kInt64) {
        want_ints += 1 + NumElements(spec);
      } else {
        want_ints += 1;
        want_floats += NumElements(spec) * (1 + NumSlots(spec.optimizer));
      }
    } else {
      const int64_t rows = theirs[kRows];
      if (rows < 0 || rows > static_cast<int64_t>(ints.size())) {
        return absl::InternalError(absl::StrCat(
            "the model state of rank ", root,
            " is inconsistent: ", e.Describe(), " has ", rows,
            " rows in a message of ", ints.size(), " int64 values"));
      }
      want_ints += 2 * rows;
      want_floats += rows * e.table->spec().dim *
                     (1 + NumSlots(e.table->spec().optimizer));
    }
  }
  if (want_ints != header[kIntsSize] || want_floats != header[kFloatsSize]) {
    return absl::InternalError(absl::StrCat(
        "the model state of rank ", root, " is inconsistent: its header says ",
        header[kIntsSize], " int64 and ", header[kFloatsSize],
        " float32 values, its description of the model implies ", want_ints,
        " and ", want_floats));
  }
  return absl::OkStatus();
}

// On a non-root rank, after CheckAgainstRoot: imports the root's state into
// every entry, one at a time.
absl::Status ImportAll(const std::vector<Entry>& entries,
                       const StateBuffers& in) {
  const int64_t* ints = in.ints.data() + entries.size() * kDescriptorSize;
  const float* floats = in.floats.data();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.variable != nullptr) {
      const VariableSpec& spec = e.variable->spec();
      const int64_t n = NumElements(spec);
      VariableState state;
      state.step = *ints++;
      if (spec.dtype == DType::kInt64) {
        state.ints.assign(ints, ints + n);
        ints += n;
      } else {
        state.values.assign(floats, floats + n);
        floats += n;
        for (int64_t s = 0; s < NumSlots(spec.optimizer); ++s) {
          state.slots.emplace_back(floats, floats + n);
          floats += n;
        }
      }
      RETURN_IF_ERROR(e.variable->ImportState(state));
    } else {
      const HashEmbeddingSpec& spec = e.table->spec();
      const int64_t rows = in.ints[i * kDescriptorSize + kRows];
      const int64_t n = rows * spec.dim;
      HashTableState state;
      state.ids.assign(ints, ints + rows);
      ints += rows;
      state.steps.assign(ints, ints + rows);
      ints += rows;
      state.values.assign(floats, floats + n);
      floats += n;
      for (int64_t s = 0; s < NumSlots(spec.optimizer); ++s) {
        state.slots.emplace_back(floats, floats + n);
        floats += n;
      }
      RETURN_IF_ERROR(e.table->ImportState(std::move(state)));
    }
  }
  return absl::OkStatus();
}

absl::Status Annotate(const absl::Status& status, absl::string_view what) {
  return absl::Status(status.code(),
                      absl::StrCat(what, ": ", status.message()));
}

// On the root: exports the state into `buffers` and fills in the header
// that announces it. Where the export fails, the header carries its code
// instead, so that the others stop with the root; returns the export's
// status.
absl::Status ExportWithHeader(const std::vector<Entry>& entries,
                              std::vector<int64_t>& header,
                              StateBuffers& buffers) {
  const absl::Status exported = ExportAll(entries, buffers);
  header[kVersion] = kStateFormatVersion;
  if (!exported.ok()) {
    // The header still goes out, so that the others stop with us.
    header[kRootError] = static_cast<int64_t>(exported.code());
    buffers = StateBuffers();
  }
  for (const Entry& e : entries) {
    ++header[e.variable != nullptr ? kNumVariables : kNumTables];
  }
  header[kIntsSize] = static_cast<int64_t>(buffers.ints.size());
  header[kFloatsSize] = static_cast<int64_t>(buffers.floats.size());
  return exported;
}

// On every rank, once the header is broadcast: the root's export error
// (the root's own, or its code on the others), or a header that announces
// negative sizes.
absl::Status CheckHeader(absl::Span<const int64_t> header,
                         const absl::Status& exported, int rank, int root,
                         absl::string_view what) {
  if (header[kRootError] != 0) {
    if (rank == root) return Annotate(exported, what);
    int64_t code = header[kRootError];
    if (code < 1 ||
        code > static_cast<int64_t>(absl::StatusCode::kUnauthenticated)) {
      code = static_cast<int64_t>(absl::StatusCode::kUnknown);
    }
    return absl::Status(
        static_cast<absl::StatusCode>(code),
        absl::StrCat(what, ": rank ", root,
                     " could not export its model state, so nothing was "
                     "broadcast (rank ",
                     root, "'s error says why)"));
  }
  if (header[kIntsSize] < 0 || header[kFloatsSize] < 0) {
    // Only a broken root sends this; nothing sensible can follow.
    return absl::InternalError(
        absl::StrCat(what, ": its header announces ", header[kIntsSize],
                     " int64 and ", header[kFloatsSize], " float32 values"));
  }
  return absl::OkStatus();
}

// Every rank, the root included, says whether it can take the state
// described by `header` and `ints`, so that all of them go on to the
// float32 broadcast or none does. Returns this rank's refusal, or one that
// names the ranks that refused.
absl::Status AgreeOnState(CrossWorkerCollective& workers,
                          const std::vector<Entry>& entries,
                          absl::Span<const int64_t> header,
                          absl::Span<const int64_t> ints, int root,
                          absl::string_view what) {
  const int rank = workers.rank();
  const int size = workers.size();
  const absl::Status agreed =
      rank == root ? absl::OkStatus()
                   : CheckAgainstRoot(entries, header, ints, rank, root);
  std::vector<int64_t> refused(size, 0);
  refused[rank] = agreed.ok() ? 0 : 1;
  if (absl::Status s = workers.AllReduceSum(absl::MakeSpan(refused)); !s.ok()) {
    return Annotate(s, what);
  }
  std::vector<int> refusing;
  for (int r = 0; r < size; ++r) {
    if (refused[r] != 0) refusing.push_back(r);
  }
  if (refusing.empty()) return absl::OkStatus();
  if (!agreed.ok()) return Annotate(agreed, what);
  return absl::FailedPreconditionError(absl::StrCat(
      what, ": ", refusing.size() == 1 ? "rank " : "ranks ",
      absl::StrJoin(refusing, ", "),
      refusing.size() == 1 ? "'s model differs" : "' models differ",
      " from rank ", root, "'s (their errors say how); nothing changed"));
}

}  // namespace

absl::StatusOr<ModelCheckpointSaved> SaveModelCheckpoint(
    const ModelVariables& variables, const std::string& root_dir, int64_t step,
    int keep_last) {
  // CommitCheckpoint would refuse it too, but only after the shard was
  // written.
  if (keep_last < 0) {
    return absl::InvalidArgumentError(absl::StrCat("saving a checkpoint to ",
                                                   root_dir, ": keep_last ",
                                                   keep_last, " is negative"));
  }
  // A ps task's store holding every variable whole: SaveShard writes it as
  // a ps task would, so every reader of checkpoints reads this one.
  VariableStore store;
  HashTableSet tables;
  for (const Entry& e : EntriesOf(variables)) {
    if (e.variable != nullptr) {
      // Exported before creating, so that a variable that cannot export
      // fails before its initial values are computed.
      ASSIGN_OR_RETURN(VariableState state, e.variable->ExportState(0));
      const VariableSpec& spec = e.variable->spec();
      RETURN_IF_ERROR(store.Create(spec, AllRows(spec)).status());
      RETURN_IF_ERROR(store.Replace(spec.name, std::move(state)));
    } else {
      ASSIGN_OR_RETURN(HashTableState state, e.table->ExportState());
      ASSIGN_OR_RETURN(HashEmbeddingTable * created,
                       tables.Create(e.table->spec()));
      RETURN_IF_ERROR(created->Replace(std::move(state)));
    }
  }
  ASSIGN_OR_RETURN(SavedShardInfo saved,
                   SaveShard(store, tables, root_dir, step, /*shard_index=*/0,
                             /*num_shards=*/1));
  ASSIGN_OR_RETURN(
      CommitInfo committed,
      CommitCheckpoint(root_dir, step, /*num_shards=*/1, keep_last));
  ModelCheckpointSaved result;
  result.checkpoint = committed.checkpoint_dir;
  result.bytes = saved.bytes;
  result.deleted = std::move(committed.deleted);
  result.cleanup_errors = std::move(committed.cleanup_errors);
  return result;
}

absl::StatusOr<ModelCheckpointRestored> RestoreModelCheckpoint(
    const ModelVariables& variables, const std::string& dir) {
  const std::vector<Entry> entries = EntriesOf(variables);
  // Restored as one ps task holding everything: RestoreShard compares the
  // specs, assembles whole variables from however many parts were saved,
  // and verifies everything before it changes the store, so the variables
  // change only once all of the checkpoint is known to be good.
  VariableStore store;
  HashTableSet tables;
  RETURN_IF_ERROR(CreateLike(entries, store, tables));
  ASSIGN_OR_RETURN(
      RestoreInfo restored,
      RestoreShard(store, tables, dir, /*shard_index=*/0, /*num_shards=*/1,
                   /*verify_only=*/false));
  // Sizes follow from the same specs, so imports fail only for variables
  // that cannot import at all (on parameter servers), which the first one,
  // the global step, already shows.
  for (const Entry& e : entries) {
    if (e.variable != nullptr) {
      ASSIGN_OR_RETURN(VariableState state, store.Snapshot(e.name()));
      RETURN_IF_ERROR(e.variable->ImportState(state));
    } else {
      ASSIGN_OR_RETURN(HashEmbeddingTable * table, tables.Find(e.name()));
      RETURN_IF_ERROR(e.table->ImportState(table->Export()));
    }
  }
  ModelCheckpointRestored result;
  result.checkpoint = restored.checkpoint_dir;
  result.step = restored.step;
  return result;
}

absl::Status BroadcastModelState(CrossWorkerCollective& workers,
                                 const ModelVariables& variables, int root) {
  const int rank = workers.rank();
  const int size = workers.size();
  if (root < 0 || root >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcasting the model state: root ", root,
                     " is not a rank of the ", size, " workers"));
  }
  const std::string what =
      absl::StrCat("broadcasting the model state from rank ", root);
  const std::vector<Entry> entries = EntriesOf(variables);

  std::vector<int64_t> header(kHeaderSize, 0);
  StateBuffers buffers;
  absl::Status exported;
  if (rank == root) exported = ExportWithHeader(entries, header, buffers);
  if (absl::Status s = workers.Broadcast(absl::MakeSpan(header), root);
      !s.ok()) {
    return Annotate(s, what);
  }
  RETURN_IF_ERROR(CheckHeader(header, exported, rank, root, what));

  if (rank != root) buffers.ints.resize(header[kIntsSize]);
  if (absl::Status s = workers.Broadcast(absl::MakeSpan(buffers.ints), root);
      !s.ok()) {
    return Annotate(s, what);
  }
  RETURN_IF_ERROR(
      AgreeOnState(workers, entries, header, buffers.ints, root, what));

  if (rank != root) buffers.floats.resize(header[kFloatsSize]);
  if (absl::Status s = workers.Broadcast(absl::MakeSpan(buffers.floats), root);
      !s.ok()) {
    return Annotate(s, what);
  }
  if (rank == root) return absl::OkStatus();
  if (absl::Status s = ImportAll(entries, buffers); !s.ok()) {
    return Annotate(s, what);
  }
  return absl::OkStatus();
}

}  // namespace distrt
