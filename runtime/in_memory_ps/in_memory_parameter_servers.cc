#include "runtime/in_memory_ps/in_memory_parameter_servers.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// `status` with the task it came from, as PsClient's errors name it.
absl::Status OnTask(int ps_task, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(
      status.code(),
      absl::StrCat("ps task ", ps_task, " (in process): ", status.message()));
}

// The positions in `ids` of each group's ids, where `group_of` gives an
// id's group in [0, groups); -1 stops the grouping and returns that id.
template <typename GroupOf>
std::optional<int64_t> GroupIds(absl::Span<const int64_t> ids, int groups,
                                GroupOf group_of,
                                std::vector<std::vector<size_t>>* positions) {
  positions->assign(groups, {});
  for (size_t i = 0; i < ids.size(); ++i) {
    const int group = group_of(ids[i]);
    if (group < 0) return ids[i];
    (*positions)[group].push_back(i);
  }
  return std::nullopt;
}

absl::Status CheckRowsBuffer(absl::string_view kind, absl::string_view name,
                             size_t ids, int64_t width, size_t values) {
  if (values != ids * width) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " \"", name, "\": ", ids, " ids of ", width,
                     " values need ", ids * width, " values, got ", values));
  }
  return absl::OkStatus();
}

// Gathers the rows at `positions` of `rows` (width values each).
template <typename T>
std::vector<T> GatherRows(absl::Span<const T> rows, int64_t width,
                          const std::vector<size_t>& positions) {
  std::vector<T> out;
  out.reserve(positions.size() * width);
  for (size_t p : positions) {
    out.insert(out.end(), rows.begin() + p * width,
               rows.begin() + (p + 1) * width);
  }
  return out;
}

void ScatterRows(absl::Span<const float> rows, int64_t width,
                 const std::vector<size_t>& positions, absl::Span<float> out) {
  for (size_t i = 0; i < positions.size(); ++i) {
    std::copy(rows.begin() + i * width, rows.begin() + (i + 1) * width,
              out.begin() + positions[i] * width);
  }
}

// Rows of `ids` into `out` (width values each), group by group:
// `pull(group, its ids, its rows)`.
template <typename PullGroup>
absl::Status PullByGroup(const std::vector<std::vector<size_t>>& positions,
                         absl::Span<const int64_t> ids, int64_t width,
                         absl::Span<float> out, PullGroup pull) {
  for (size_t g = 0; g < positions.size(); ++g) {
    if (positions[g].empty()) continue;
    std::vector<float> rows(positions[g].size() * width);
    RETURN_IF_ERROR(
        pull(g, GatherRows(ids, 1, positions[g]), absl::MakeSpan(rows)));
    ScatterRows(rows, width, positions[g], out);
  }
  return absl::OkStatus();
}

// Gradients `grads` of `ids` (width values each), group by group:
// `push(group, its ids, its gradients)`.
template <typename PushGroup>
absl::Status PushByGroup(const std::vector<std::vector<size_t>>& positions,
                         absl::Span<const int64_t> ids, int64_t width,
                         absl::Span<const float> grads, PushGroup push) {
  for (size_t g = 0; g < positions.size(); ++g) {
    if (positions[g].empty()) continue;
    RETURN_IF_ERROR(push(g, GatherRows(ids, 1, positions[g]),
                         GatherRows(grads, width, positions[g])));
  }
  return absl::OkStatus();
}

// Calls `fn(part, its rows)` for every part of `variable`, where its rows
// are the part's slice of `values`, all the variable's elements.
template <typename T, typename Fn>
absl::Status ForEachPart(const VariablePlacement& variable,
                         absl::Span<T> values, Fn fn) {
  const int64_t width = RowWidth(variable.spec);
  for (const VariablePart& part : variable.parts) {
    absl::Status s = fn(part, values.subspan(part.rows.begin * width,
                                             part.rows.size() * width));
    if (!s.ok()) return OnTask(part.ps_task, s);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<InMemoryParameterServers>>
InMemoryParameterServers::Create(int num_ps_tasks,
                                 PlacementStrategy placement) {
  ASSIGN_OR_RETURN(VariablePlacer placer,
                   VariablePlacer::Create(num_ps_tasks, placement));
  return std::unique_ptr<InMemoryParameterServers>(
      new InMemoryParameterServers(num_ps_tasks, std::move(placer)));
}

InMemoryParameterServers::InMemoryParameterServers(int num_ps_tasks,
                                                   VariablePlacer placer)
    : placer_(std::move(placer)) {
  for (int t = 0; t < num_ps_tasks; ++t) {
    tasks_.push_back(std::make_unique<Task>());
  }
}

absl::StatusOr<VariablePlacement> InMemoryParameterServers::Lookup(
    absl::string_view name) const {
  absl::MutexLock lock(&placer_mu_);
  auto it = placed_.find(name);
  if (it == placed_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no variable \"", name, "\" on any ps task"));
  }
  return it->second;
}

absl::StatusOr<VariablePlacement> InMemoryParameterServers::CreateVariable(
    const CreateVariableRequest& request) {
  const VariableSpec& spec = request.spec;
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  VariablePlacement placement;
  if (request.colocate_with.has_value()) {
    ASSIGN_OR_RETURN(VariablePlacement other, Lookup(*request.colocate_with));
    placement.spec = spec;
    placement.parts.push_back({other.parts[0].ps_task, {0, NumRows(spec)}});
    return CreateParts(std::move(placement));
  }
  {
    absl::MutexLock lock(&placer_mu_);
    if (auto it = placed_.find(spec.name); it != placed_.end()) {
      placement = it->second;
      placement.spec = spec;  // the stores compare specs
    } else {
      ASSIGN_OR_RETURN(VariablePlacement placed,
                       placer_.Place(spec, request.partition));
      placement = std::move(placed);
    }
  }
  return CreateParts(std::move(placement));
}

absl::StatusOr<VariablePlacement> InMemoryParameterServers::CreateParts(
    VariablePlacement placement) {
  for (const VariablePart& part : placement.parts) {
    absl::StatusOr<VariableInfo> created =
        tasks_[part.ps_task]->variables.Create(placement.spec, part.rows);
    if (!created.ok()) return OnTask(part.ps_task, created.status());
  }
  absl::MutexLock lock(&placer_mu_);
  placed_.try_emplace(placement.spec.name, placement);
  return placement;
}

absl::Status InMemoryParameterServers::CheckPlacement(
    const VariablePlacement& variable) const {
  RETURN_IF_ERROR(ValidatePlacement(variable));
  for (const VariablePart& part : variable.parts) {
    if (part.ps_task >= num_ps_tasks()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", variable.spec.name, "\" is placed on ps task ",
          part.ps_task, " of ", num_ps_tasks()));
    }
  }
  return absl::OkStatus();
}

absl::Status InMemoryParameterServers::CheckWhole(
    const VariablePlacement& variable, DType dtype, size_t elements) const {
  RETURN_IF_ERROR(CheckPlacement(variable));
  const VariableSpec& spec = variable.spec;
  if (spec.dtype != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", spec.name, "\" is ", DTypeName(spec.dtype),
                     ", not ", DTypeName(dtype)));
  }
  const size_t whole = NumRows(spec) * RowWidth(spec);
  if (elements != whole) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", spec.name, "\" has ", whole,
                     " elements, the buffer ", elements));
  }
  return absl::OkStatus();
}

absl::Status InMemoryParameterServers::ReadDense(
    const VariablePlacement& variable, absl::Span<float> out) {
  RETURN_IF_ERROR(CheckWhole(variable, DType::kFloat32, out.size()));
  return ForEachPart(variable, out, [&](const VariablePart& part, auto rows) {
    return Store(part).PullRows(variable.spec.name, part.rows, rows);
  });
}

absl::Status InMemoryParameterServers::ApplyDense(
    const VariablePlacement& variable, absl::Span<const float> grad) {
  RETURN_IF_ERROR(CheckWhole(variable, DType::kFloat32, grad.size()));
  return ForEachPart(variable, grad, [&](const VariablePart& part, auto rows) {
    return Store(part).PushRows(variable.spec.name, part.rows, rows);
  });
}

absl::Status InMemoryParameterServers::WriteDense(
    const DenseVariableWrite& write) {
  const VariablePlacement& variable = *write.variable;
  RETURN_IF_ERROR(CheckWhole(variable, DType::kFloat32, write.values.size()));
  return ForEachPart(
      variable, write.values, [&](const VariablePart& part, auto rows) {
        return write.write == VariableWrite::kAssign
                   ? Store(part).AssignRows(variable.spec.name, part.rows, rows)
                   : Store(part).AddRows(variable.spec.name, part.rows, rows);
      });
}

absl::Status InMemoryParameterServers::AssignInt64Whole(
    const VariablePlacement& variable, absl::Span<const int64_t> values) {
  RETURN_IF_ERROR(CheckWhole(variable, DType::kInt64, values.size()));
  return ForEachPart(
      variable, values, [&](const VariablePart& part, auto rows) {
        return Store(part).AssignInt64(variable.spec.name, part.rows, rows);
      });
}

absl::Status InMemoryParameterServers::ReadInt64(
    const VariablePlacement& variable, absl::Span<int64_t> out) {
  RETURN_IF_ERROR(CheckWhole(variable, DType::kInt64, out.size()));
  return ForEachPart(variable, out, [&](const VariablePart& part, auto rows) {
    return Store(part).PullInt64(variable.spec.name, part.rows, rows);
  });
}

absl::Status InMemoryParameterServers::AddInt64Whole(
    const VariablePlacement& variable, absl::Span<const int64_t> delta,
    absl::Span<int64_t> after) {
  RETURN_IF_ERROR(CheckWhole(variable, DType::kInt64, delta.size()));
  if (!after.empty()) {
    RETURN_IF_ERROR(CheckWhole(variable, DType::kInt64, after.size()));
  }
  return ForEachPart(variable, delta, [&](const VariablePart& part, auto rows) {
    return Store(part).AddInt64(
        variable.spec.name, part.rows, rows,
        after.empty() ? after
                      : after.subspan(part.rows.begin * RowWidth(variable.spec),
                                      rows.size()));
  });
}

absl::StatusOr<std::vector<std::vector<size_t>>>
InMemoryParameterServers::PositionsByPart(const VariablePlacement& variable,
                                          absl::Span<const int64_t> ids,
                                          size_t values) const {
  RETURN_IF_ERROR(CheckPlacement(variable));
  RETURN_IF_ERROR(CheckRowsBuffer("variable", variable.spec.name, ids.size(),
                                  RowWidth(variable.spec), values));
  std::vector<std::vector<size_t>> positions;
  if (std::optional<int64_t> bad = GroupIds(
          ids, variable.parts.size(),
          [&](int64_t id) { return PartContainingRow(variable, id); },
          &positions)) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", variable.spec.name, "\" has no row id ",
                     *bad, " (it has ", NumRows(variable.spec), " rows)"));
  }
  return positions;
}

absl::Status InMemoryParameterServers::ReadRows(
    const VariablePlacement& variable, absl::Span<const int64_t> ids,
    absl::Span<float> out) {
  ASSIGN_OR_RETURN(std::vector<std::vector<size_t>> positions,
                   PositionsByPart(variable, ids, out.size()));
  return PullByGroup(positions, ids, RowWidth(variable.spec), out,
                     [&](size_t p, absl::Span<const int64_t> part_ids,
                         absl::Span<float> rows) {
                       const VariablePart& part = variable.parts[p];
                       return OnTask(part.ps_task,
                                     Store(part).PullSparse(variable.spec.name,
                                                            part_ids, rows));
                     });
}

absl::Status InMemoryParameterServers::ApplyRows(
    const VariablePlacement& variable, absl::Span<const int64_t> ids,
    absl::Span<const float> grads) {
  ASSIGN_OR_RETURN(std::vector<std::vector<size_t>> positions,
                   PositionsByPart(variable, ids, grads.size()));
  return PushByGroup(positions, ids, RowWidth(variable.spec), grads,
                     [&](size_t p, absl::Span<const int64_t> part_ids,
                         absl::Span<const float> part_grads) {
                       const VariablePart& part = variable.parts[p];
                       return OnTask(part.ps_task, Store(part).PushSparse(
                                                       variable.spec.name,
                                                       part_ids, part_grads));
                     });
}

absl::Status InMemoryParameterServers::CreateHashTable(
    const HashEmbeddingSpec& spec) {
  for (int t = 0; t < num_ps_tasks(); ++t) {
    absl::StatusOr<HashEmbeddingTable*> table =
        tasks_[t]->hash_tables.Create(spec);
    if (!table.ok()) return OnTask(t, table.status());
  }
  return absl::OkStatus();
}

absl::StatusOr<InMemoryParameterServers::HashShards>
InMemoryParameterServers::Shards(const HashEmbeddingSpec& table,
                                 absl::Span<const int64_t> ids,
                                 size_t values) const {
  RETURN_IF_ERROR(
      CheckRowsBuffer("hash table", table.name, ids.size(), table.dim, values));
  HashShards shards;
  for (int t = 0; t < num_ps_tasks(); ++t) {
    absl::StatusOr<HashEmbeddingTable*> shard =
        tasks_[t]->hash_tables.Find(table.name);
    if (!shard.ok()) return OnTask(t, shard.status());
    shards.tables.push_back(*shard);
  }
  const int n = num_ps_tasks();
  (void)GroupIds(
      ids, n, [n](int64_t id) { return HashShardOf(id, n); },
      &shards.positions);
  return shards;
}

absl::Status InMemoryParameterServers::ReadHash(const HashEmbeddingSpec& table,
                                                absl::Span<const int64_t> ids,
                                                absl::Span<float> out) {
  ASSIGN_OR_RETURN(HashShards shards, Shards(table, ids, out.size()));
  return PullByGroup(shards.positions, ids, table.dim, out,
                     [&](size_t t, absl::Span<const int64_t> task_ids,
                         absl::Span<float> rows) {
                       return OnTask(t, shards.tables[t]->Pull(task_ids, rows));
                     });
}

absl::Status InMemoryParameterServers::ApplyHash(const HashEmbeddingSpec& table,
                                                 absl::Span<const int64_t> ids,
                                                 absl::Span<const float> grads,
                                                 int64_t global_step) {
  ASSIGN_OR_RETURN(HashShards shards, Shards(table, ids, grads.size()));
  return PushByGroup(
      shards.positions, ids, table.dim, grads,
      [&](size_t t, absl::Span<const int64_t> task_ids,
          absl::Span<const float> task_grads) {
        return OnTask(
            t, shards.tables[t]->Push(task_ids, task_grads,
                                      SparseIds::kMayRepeat, global_step));
      });
}

absl::Status InMemoryParameterServers::CheckRead(
    const ReadRequest& request) const {
  for (const DenseVariablePull& pull : request.dense) {
    RETURN_IF_ERROR(
        CheckWhole(*pull.variable, DType::kFloat32, pull.out.size()));
  }
  for (const SparseVariablePull& pull : request.sparse) {
    RETURN_IF_ERROR(
        PositionsByPart(*pull.variable, pull.ids, pull.out.size()).status());
  }
  for (const Int64VariablePull& pull : request.int64) {
    RETURN_IF_ERROR(CheckWhole(*pull.variable, DType::kInt64, pull.out.size()));
  }
  for (const HashTablePull& pull : request.hash) {
    RETURN_IF_ERROR(Shards(*pull.table, pull.ids, pull.out.size()).status());
  }
  return absl::OkStatus();
}

absl::Status InMemoryParameterServers::CheckUpdate(
    const UpdateRequest& request) const {
  for (const DenseVariablePush& push : request.dense) {
    RETURN_IF_ERROR(
        CheckWhole(*push.variable, DType::kFloat32, push.grad.size()));
  }
  for (const SparseVariablePush& push : request.sparse) {
    RETURN_IF_ERROR(
        PositionsByPart(*push.variable, push.ids, push.grads.size()).status());
  }
  for (const HashTablePush& push : request.hash) {
    RETURN_IF_ERROR(Shards(*push.table, push.ids, push.grads.size()).status());
  }
  for (const DenseVariableWrite& write : request.writes) {
    RETURN_IF_ERROR(
        CheckWhole(*write.variable, DType::kFloat32, write.values.size()));
  }
  for (const Int64VariableAssign& assign : request.int64_assigns) {
    RETURN_IF_ERROR(
        CheckWhole(*assign.variable, DType::kInt64, assign.values.size()));
  }
  for (const Int64VariableAdd& add : request.int64_adds) {
    RETURN_IF_ERROR(CheckWhole(*add.variable, DType::kInt64, add.delta.size()));
    if (!add.after.empty()) {
      RETURN_IF_ERROR(
          CheckWhole(*add.variable, DType::kInt64, add.after.size()));
    }
  }
  if (request.then_read != nullptr) {
    RETURN_IF_ERROR(CheckRead(*request.then_read));
  }
  return absl::OkStatus();
}

absl::Status InMemoryParameterServers::Read(const ReadRequest& request) {
  RETURN_IF_ERROR(CheckRead(request));
  return ReadChecked(request);
}

absl::Status InMemoryParameterServers::ReadChecked(const ReadRequest& request) {
  for (const DenseVariablePull& pull : request.dense) {
    RETURN_IF_ERROR(ReadDense(*pull.variable, pull.out));
  }
  for (const SparseVariablePull& pull : request.sparse) {
    RETURN_IF_ERROR(ReadRows(*pull.variable, pull.ids, pull.out));
  }
  for (const Int64VariablePull& pull : request.int64) {
    RETURN_IF_ERROR(ReadInt64(*pull.variable, pull.out));
  }
  for (const HashTablePull& pull : request.hash) {
    RETURN_IF_ERROR(ReadHash(*pull.table, pull.ids, pull.out));
  }
  return absl::OkStatus();
}

absl::Status InMemoryParameterServers::Update(const UpdateRequest& request) {
  RETURN_IF_ERROR(CheckUpdate(request));
  for (const DenseVariableWrite& write : request.writes) {
    RETURN_IF_ERROR(WriteDense(write));
  }
  for (const Int64VariableAssign& assign : request.int64_assigns) {
    RETURN_IF_ERROR(AssignInt64Whole(*assign.variable, assign.values));
  }
  for (const HashTablePush& push : request.hash) {
    RETURN_IF_ERROR(
        ApplyHash(*push.table, push.ids, push.grads, request.global_step));
  }
  for (const DenseVariablePush& push : request.dense) {
    RETURN_IF_ERROR(ApplyDense(*push.variable, push.grad));
  }
  for (const SparseVariablePush& push : request.sparse) {
    RETURN_IF_ERROR(ApplyRows(*push.variable, push.ids, push.grads));
  }
  for (const Int64VariableAdd& add : request.int64_adds) {
    RETURN_IF_ERROR(AddInt64Whole(*add.variable, add.delta, add.after));
  }
  if (request.then_read == nullptr) return absl::OkStatus();
  return ReadChecked(*request.then_read);  // CheckUpdate checked it
}

absl::StatusOr<CheckpointSaved> InMemoryParameterServers::Save(
    const std::string& directory, int64_t step, int keep_last) {
  return SaveShards(directory, step, keep_last, nullptr);
}

absl::StatusOr<CheckpointSaved> InMemoryParameterServers::SaveDelta(
    const std::string& directory, int64_t step, int keep_last,
    const DeltaSaveOf& delta) {
  return SaveShards(directory, step, keep_last, &delta);
}

absl::StatusOr<CheckpointSaved> InMemoryParameterServers::SaveShards(
    const std::string& directory, int64_t step, int keep_last,
    const DeltaSaveOf* delta) {
  absl::MutexLock lock(&checkpoint_mu_);
  const int n = num_ps_tasks();
  SaveShardOptions options;
  options.mark = true;
  if (delta != nullptr) {
    const std::string previous = JoinPath(directory, delta->previous);
    for (int t = 0; t < n; ++t) {
      if (tasks_[t]->marks_at != previous) {
        return OnTask(t, absl::FailedPreconditionError(absl::StrCat(
                             "cannot save a delta of ", previous,
                             ": the tables were last saved or restored as ",
                             tasks_[t]->marks_at.empty() ? "nothing known"
                                                         : tasks_[t]->marks_at,
                             "; save in full")));
      }
    }
    options.delta.emplace();
    options.delta->set_previous(delta->previous);
    options.delta->set_base(delta->base);
  }
  const std::string name = JoinPath(directory, CheckpointDirName(step));
  CheckpointSaved saved;
  for (int t = 0; t < n; ++t) {
    tasks_[t]->marks_at.clear();
    absl::StatusOr<SavedShardInfo> shard =
        SaveShard(tasks_[t]->variables, tasks_[t]->hash_tables, directory, step,
                  t, n, options);
    if (!shard.ok()) return OnTask(t, shard.status());
    tasks_[t]->marks_at = name;
    saved.bytes += shard->bytes;
    saved.table_rows_written += shard->table_rows_written;
    saved.table_rows_held += shard->table_rows_held;
  }
  absl::StatusOr<CommitInfo> committed =
      CommitCheckpoint(directory, step, n, keep_last);
  if (!committed.ok()) return OnTask(0, committed.status());
  saved.checkpoint = committed->checkpoint_dir;
  saved.deleted = committed->deleted;
  return saved;
}

absl::StatusOr<CheckpointRestored> InMemoryParameterServers::Restore(
    const std::string& directory) {
  absl::MutexLock lock(&checkpoint_mu_);
  const int n = num_ps_tasks();
  CheckpointRestored restored;
  // Every task verifies before any loads, as PsClient::Restore asks them.
  for (bool verify_only : {true, false}) {
    restored = CheckpointRestored();
    for (int t = 0; t < n; ++t) {
      if (!verify_only) tasks_[t]->marks_at.clear();
      absl::StatusOr<RestoreInfo> shard =
          RestoreShard(tasks_[t]->variables, tasks_[t]->hash_tables, directory,
                       t, n, verify_only);
      if (!shard.ok()) return OnTask(t, shard.status());
      if (!verify_only) tasks_[t]->marks_at = shard->checkpoint_dir;
      restored.checkpoint = shard->checkpoint_dir;
      restored.step = shard->step;
      restored.variables_restored += shard->variables_restored;
      restored.hash_table_rows_restored += shard->hash_table_rows_restored;
    }
  }
  return restored;
}

}  // namespace distrt
