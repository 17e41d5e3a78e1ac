#include "client/ps_request_planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/ps_service.pb.h"
#include "runtime/tensor/dtype.h"

namespace distrt::ps_client_internal {
namespace {

// Calls `piece(ps_task, rows)` for each piece of SplitRows, in order.
void ForEachPiece(const VariablePlacement& variable, RowRange rows,
                  int64_t max_request_bytes,
                  absl::FunctionRef<void(int, RowRange)> piece) {
  const int64_t row_bytes = std::max<int64_t>(
      1, RowWidth(variable.spec) * DTypeSize(variable.spec.dtype));
  const int64_t max_rows = std::max<int64_t>(1, max_request_bytes / row_bytes);
  for (const VariablePart& part : variable.parts) {
    const int64_t begin = std::max(rows.begin, part.rows.begin);
    const int64_t end = std::min(rows.end, part.rows.end);
    for (int64_t b = begin; b < end; b += max_rows) {
      piece(part.ps_task, RowRange{b, std::min(end, b + max_rows)});
    }
  }
}

// Appends to `calls` the calls of one shard, to `task`: its `positions`
// (moved from) cut into calls of at most `max_ids` ids, and their ids.
template <typename Request, typename Response>
void AppendShardCalls(const int64_t* ids, std::vector<size_t>& positions,
                      int64_t max_ids, int task,
                      Calls<Request, Response>& calls) {
  const size_t n = positions.size();
  for (size_t begin = 0; begin < n; begin += max_ids) {
    const size_t end = std::min<size_t>(n, begin + max_ids);
    auto call = std::make_unique<Call<Request, Response>>(task);
    if (begin == 0 && end == n) {
      call->positions = std::move(positions);  // the whole shard: no copy
    } else {
      call->positions.assign(positions.begin() + begin,
                             positions.begin() + end);
    }
    call->ids.resize(call->positions.size());
    int64_t* call_ids = call->ids.data();
    const size_t* call_positions = call->positions.data();
    for (size_t k = 0; k < call->positions.size(); ++k) {
      call_ids[k] = ids[call_positions[k]];
    }
    calls.push_back(std::move(call));
  }
}

// Distinct ids grouped by the ps task (and part) that holds them, in
// requests of at most `max_ids` ids; each call's positions are those of its
// ids' first occurrences in `ids`, ascending. `shard_of(id)` is the part
// index in [0, num_shards), or -1 for an id that is not a row.
//
// This runs for every id a worker pulls and pushes, so: a template over
// the lambdas (inlined), raw pointers in locals (the compiler keeps them in
// registers across the loops' stores, and Debian's hardened Abseil
// bound-checks every Span::operator[]), and positions reserved per shard up
// front.
template <typename Request, typename Response, typename ShardOf,
          typename TaskOfShard>
absl::StatusOr<Calls<Request, Response>> GroupIds(
    absl::Span<const int64_t> ids, const IdRepeats& repeats, int64_t max_ids,
    int num_shards, ShardOf shard_of, TaskOfShard task_of_shard,
    absl::string_view name) {
  const int64_t* id = ids.data();
  const bool any_repeats = repeats.any();
  const size_t* first = repeats.first.data();
  const size_t num_distinct = any_repeats ? repeats.first.size() : ids.size();
  Calls<Request, Response> calls;
  if (num_shards == 1) {
    // Every id to the one shard (a variable in one part, or one ps task's
    // hash shard): checked without a branch per id, then gathered. An id
    // not held is named by the loop below.
    bool all_held = true;
    for (size_t d = 0; d < num_distinct; ++d) {
      all_held &= shard_of(id[any_repeats ? first[d] : d]) == 0;
    }
    if (all_held) {
      std::vector<size_t> positions(num_distinct);
      for (size_t d = 0; d < num_distinct; ++d) {
        positions[d] = any_repeats ? first[d] : d;
      }
      AppendShardCalls(id, positions, max_ids, task_of_shard(0), calls);
      return calls;
    }
  }
  // Indexed by shard (a part's index or a task's: small numbers), which
  // spares a map lookup per id; each reserved for an even share and a
  // margin, so that a step's ids grow no vector more than once or twice.
  std::vector<std::vector<size_t>> positions_by_shard(std::max(num_shards, 1));
  const size_t share = num_distinct / positions_by_shard.size();
  for (std::vector<size_t>& positions : positions_by_shard) {
    positions.reserve(std::min(num_distinct, share + share / 8 + 16));
  }
  for (size_t d = 0; d < num_distinct; ++d) {
    const size_t i = any_repeats ? first[d] : d;
    const int shard = shard_of(id[i]);
    if (shard < 0 || shard >= num_shards) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", name, "\": id ", id[i], " is not one of its rows"));
    }
    positions_by_shard[shard].push_back(i);
  }
  for (int shard = 0; shard < num_shards; ++shard) {
    AppendShardCalls(id, positions_by_shard[shard], max_ids,
                     task_of_shard(shard), calls);
  }
  return calls;
}

using Variables = std::vector<const VariablePlacement*>;

// The bytes of float32 elements that `piece` carries.
int64_t DenseBytes(const Variables& variables, const DensePiece& piece) {
  return piece.rows.size() * RowWidth(variables[piece.variable]->spec) *
         int64_t{sizeof(float)};
}

// What an item of a batch costs beside its elements: its name, row
// range, dtype and shape, with their tags and lengths (generously), so
// that thousands of scalars still make requests within the limit.
int64_t BatchItemBytes(const Variables& variables, const DensePiece& piece) {
  return DenseBytes(variables, piece) + 64 +
         static_cast<int64_t>(variables[piece.variable]->spec.name.size()) +
         static_cast<int64_t>(10 *
                              variables[piece.variable]->spec.shape.size());
}

// The variables' parts per ps task: `small`, those of at most `batch_limit`
// bytes (and not empty), whole; `large`, the others, in ForEachPiece's
// pieces.
struct PiecesByTask {
  std::vector<std::vector<DensePiece>> small;
  std::vector<std::vector<DensePiece>> large;
};

PiecesByTask SortParts(const Variables& variables, int num_tasks,
                       int64_t batch_limit, int64_t max_request_bytes) {
  PiecesByTask pieces{std::vector<std::vector<DensePiece>>(num_tasks),
                      std::vector<std::vector<DensePiece>>(num_tasks)};
  for (size_t v = 0; v < variables.size(); ++v) {
    for (const VariablePart& part : variables[v]->parts) {
      const int64_t bytes = DenseBytes(variables, {v, part.rows});
      if (bytes > 0 && bytes <= batch_limit) {
        pieces.small[part.ps_task].push_back({v, part.rows});
      } else {
        ForEachPiece(*variables[v], part.rows, max_request_bytes,
                     [&](int task, RowRange rows) {
                       pieces.large[task].push_back({v, rows});
                     });
      }
    }
  }
  return pieces;
}

// The calls to `task`: its `small` pieces in batches of at most
// `max_request_bytes` (a batch of one is not a batch), then one call per
// `large` piece.
std::vector<std::unique_ptr<ManyCall>> TaskCalls(
    const Variables& variables, int task, const std::vector<DensePiece>& small,
    const std::vector<DensePiece>& large, int64_t max_request_bytes) {
  std::vector<std::unique_ptr<ManyCall>> calls;
  for (size_t begin = 0; begin < small.size();) {
    size_t end = begin + 1;
    int64_t bytes = BatchItemBytes(variables, small[begin]);
    while (end < small.size() &&
           bytes + BatchItemBytes(variables, small[end]) <= max_request_bytes) {
      bytes += BatchItemBytes(variables, small[end++]);
    }
    auto call = std::make_unique<ManyCall>(task);
    call->batch = end - begin > 1;
    call->pieces.assign(small.begin() + begin, small.begin() + end);
    calls.push_back(std::move(call));
    begin = end;
  }
  for (const DensePiece& piece : large) {
    calls.push_back(std::make_unique<ManyCall>(task));
    calls.back()->pieces.push_back(piece);
  }
  return calls;
}

// The tasks' calls interleaved: each task's first, then each one's second,
// and so on.
std::vector<std::unique_ptr<ManyCall>> Interleave(
    std::vector<std::vector<std::unique_ptr<ManyCall>>> by_task) {
  std::vector<std::unique_ptr<ManyCall>> calls;
  for (size_t round = 0;; ++round) {
    const size_t before = calls.size();
    for (auto& task_calls : by_task) {
      if (round < task_calls.size()) {
        calls.push_back(std::move(task_calls[round]));
      }
    }
    if (calls.size() == before) break;
  }
  return calls;
}

// Sets `call`'s method and what its errors say it is about: the rows of its
// one piece, or the variables of its batch, the first few of many.
void DescribeCall(const Variables& variables, rpc::PsMethod single_method,
                  rpc::PsMethod batch_method, ManyCall& call) {
  call.method = call.batch ? batch_method : single_method;
  const auto name = [&](size_t i) -> const std::string& {
    return variables[call.pieces[i].variable]->spec.name;
  };
  if (!call.batch) {
    call.about = absl::StrCat(" of ", RowsOf(name(0), call.pieces[0].rows));
    return;
  }
  constexpr size_t kNamed = 4;
  std::vector<absl::string_view> names;
  for (size_t i = 0; i < call.pieces.size() && i < kNamed; ++i) {
    names.push_back(name(i));
  }
  call.about = absl::StrCat(" of \"", absl::StrJoin(names, "\", \""), "\"");
  if (call.pieces.size() > kNamed) {
    absl::StrAppend(&call.about, " and ", call.pieces.size() - kNamed, " more");
  }
}

}  // namespace

absl::Status SizeMismatch(absl::string_view variable, absl::string_view what,
                          size_t given, int64_t expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("variable \"", variable, "\": ", what, " has ", given,
                   " elements, expected ", expected));
}

std::vector<PsRequestPlanner::Piece> PsRequestPlanner::SplitRows(
    const VariablePlacement& variable, RowRange rows) const {
  const int64_t width = RowWidth(variable.spec);
  std::vector<Piece> pieces;
  ForEachPiece(
      variable, rows, options_.max_request_bytes,
      [&](int ps_task, RowRange piece) {
        pieces.push_back({ps_task, piece, (piece.begin - rows.begin) * width});
      });
  return pieces;
}

absl::Status PsRequestPlanner::CheckRows(const VariablePlacement& variable,
                                         RowRange rows, size_t buffer,
                                         absl::string_view what) const {
  const int64_t num_rows = NumRows(variable.spec);
  if (rows.begin < 0 || rows.begin > rows.end || rows.end > num_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable \"", variable.spec.name, "\": rows ", RowRangeString(rows),
        " are not within its ", num_rows, " rows"));
  }
  const int64_t expected = rows.size() * RowWidth(variable.spec);
  if (static_cast<int64_t>(buffer) != expected) {
    return SizeMismatch(variable.spec.name, what, buffer, expected);
  }
  return absl::OkStatus();
}

absl::Status PsRequestPlanner::CheckManyItem(const VariablePlacement* variable,
                                             size_t index, size_t buffer,
                                             absl::string_view what) const {
  if (variable == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("item ", index, " of the list has no variable"));
  }
  if (variable->spec.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", variable->spec.name, "\" is ",
                     DTypeName(variable->spec.dtype),
                     "; a whole-variable read or gradient of float32 values "
                     "takes float32 variables only"));
  }
  return CheckRows(*variable, {0, NumRows(variable->spec)}, buffer, what);
}

std::vector<std::unique_ptr<ManyCall>> PsRequestPlanner::PlanMany(
    const std::vector<const VariablePlacement*>& variables,
    rpc::PsMethod single_method, rpc::PsMethod batch_method) const {
  const int n = options_.num_tasks;
  const int64_t max_request_bytes = options_.max_request_bytes;
  const int64_t batch_limit =
      std::min(options_.batch_below_bytes, max_request_bytes);
  const PiecesByTask pieces =
      SortParts(variables, n, batch_limit, max_request_bytes);
  std::vector<std::vector<std::unique_ptr<ManyCall>>> by_task(n);
  for (int task = 0; task < n; ++task) {
    by_task[task] = TaskCalls(variables, task, pieces.small[task],
                              pieces.large[task], max_request_bytes);
  }
  std::vector<std::unique_ptr<ManyCall>> calls = Interleave(std::move(by_task));
  for (auto& call : calls) {
    DescribeCall(variables, single_method, batch_method, *call);
  }
  return calls;
}

int64_t PsRequestPlanner::MaxIdsPerRequest(int64_t width) const {
  return std::max<int64_t>(
      1, options_.max_request_bytes /
             std::max<int64_t>(1, width * int64_t{sizeof(float)}));
}

template <typename Request, typename Response>
absl::StatusOr<Calls<Request, Response>> PsRequestPlanner::GroupVariableIds(
    const VariablePlacement& variable, absl::Span<const int64_t> ids,
    const IdRepeats& repeats) const {
  // The part of each id, without branches for the few parts a variable
  // usually has: ids come in any order, and a binary search's branches
  // mispredicted on every other id (as much time as finding repeats).
  constexpr size_t kFewParts = 16;
  const std::vector<VariablePart>& parts = variable.parts;
  std::vector<int64_t> ends;
  if (parts.size() <= kFewParts) {
    for (const VariablePart& part : parts) ends.push_back(part.rows.end);
  }
  const auto part_of = [&](int64_t id) {
    if (ends.empty()) return PartContainingRow(variable, id);
    size_t part = 0;  // parts ending at or before `id`
    for (int64_t end : ends) part += id >= end;
    return part < parts.size() && id >= parts[part].rows.begin
               ? static_cast<int>(part)
               : -1;
  };
  const auto task_of_part = [&variable](int part) {
    return variable.parts[part].ps_task;
  };
  const int64_t max_ids = MaxIdsPerRequest(RowWidth(variable.spec));
  absl::StatusOr<Calls<Request, Response>> calls;
  if (parts.size() == 1) {
    // The rows' range by value, where the compiler keeps it in registers
    // (through `ends` and `parts` it reloads both for every id).
    const RowRange rows = parts[0].rows;
    calls = GroupIds<Request, Response>(
        ids, repeats, max_ids, 1,
        [rows](int64_t id) {
          return id >= rows.begin && id < rows.end ? 0 : -1;
        },
        task_of_part, variable.spec.name);
  } else {
    calls = GroupIds<Request, Response>(ids, repeats, max_ids,
                                        static_cast<int>(parts.size()), part_of,
                                        task_of_part, variable.spec.name);
  }
  if (calls.ok()) {
    for (auto& call : *calls) call->request.set_name(variable.spec.name);
  }
  return calls;
}

template <typename Request, typename Response>
absl::StatusOr<Calls<Request, Response>> PsRequestPlanner::GroupHashIds(
    const HashEmbeddingSpec& table, absl::Span<const int64_t> ids,
    const IdRepeats& repeats) const {
  const int n = options_.num_tasks;
  auto calls = GroupIds<Request, Response>(
      ids, repeats, MaxIdsPerRequest(table.dim), n,
      [n](int64_t id) { return HashShardOf(id, n); },
      [](int shard) { return shard; }, table.name);
  if (calls.ok()) {
    for (auto& call : *calls) call->request.set_name(table.name);
  }
  return calls;
}

absl::StatusOr<Calls<ps::PushSparseRequest, ps::PushSparseResponse>>
PsRequestPlanner::GroupHashPushIds(const HashEmbeddingSpec& table,
                                   absl::Span<const int64_t> ids,
                                   const IdRepeats& repeats,
                                   int64_t global_step) const {
  auto calls = GroupHashIds<ps::PushSparseRequest, ps::PushSparseResponse>(
      table, ids, repeats);
  if (calls.ok() && global_step >= 0) {
    for (auto& call : *calls) call->request.set_global_step(global_step);
  }
  return calls;
}

// The sparse RPCs' calls, the only ones ids are grouped into.
template absl::StatusOr<Calls<ps::PullSparseRequest, ps::PullSparseResponse>>
PsRequestPlanner::GroupVariableIds(const VariablePlacement&,
                                   absl::Span<const int64_t>,
                                   const IdRepeats&) const;
template absl::StatusOr<Calls<ps::PushSparseRequest, ps::PushSparseResponse>>
PsRequestPlanner::GroupVariableIds(const VariablePlacement&,
                                   absl::Span<const int64_t>,
                                   const IdRepeats&) const;
template absl::StatusOr<Calls<ps::PullSparseRequest, ps::PullSparseResponse>>
PsRequestPlanner::GroupHashIds(const HashEmbeddingSpec&,
                               absl::Span<const int64_t>,
                               const IdRepeats&) const;
template absl::StatusOr<Calls<ps::PushSparseRequest, ps::PushSparseResponse>>
PsRequestPlanner::GroupHashIds(const HashEmbeddingSpec&,
                               absl::Span<const int64_t>,
                               const IdRepeats&) const;

std::vector<std::vector<CallBase*>> PsRequestPlanner::BundleUnits(
    const std::vector<CallBase*>& round,
    absl::FunctionRef<bool(int task)> serves_bundles) const {
  const int64_t limit = options_.bundle_below_bytes;
  // Within what the ps task accepts in one message, as every call is.
  const int64_t max_bytes = limit >= options_.max_request_bytes / 2
                                ? options_.max_request_bytes
                                : 2 * limit;
  std::vector<std::vector<CallBase*>> units;
  std::vector<std::vector<CallBase*>> small(options_.num_tasks);
  std::vector<int64_t> small_bytes(options_.num_tasks, 0);
  for (CallBase* c : round) {
    const int64_t bytes =
        static_cast<int64_t>(c->wire_request.Length()) + c->response_bytes;
    // (Every wire call is sent without waiting for the connection today;
    // one that waits goes alone rather than make a bundle wait.)
    if (limit <= 0 || bytes > limit || bytes > max_bytes || c->wait_for_ready ||
        !serves_bundles(c->ps_task)) {
      units.push_back({c});
      continue;
    }
    std::vector<CallBase*>& group = small[c->ps_task];
    int64_t& group_bytes = small_bytes[c->ps_task];
    if (group.size() == kMaxBundleParts || group_bytes + bytes > max_bytes) {
      units.push_back(std::move(group));
      group.clear();
      group_bytes = 0;
    }
    group.push_back(c);
    group_bytes += bytes;
  }
  for (std::vector<CallBase*>& group : small) {
    if (group.size() == 1) {
      units.push_back({group[0]});
    } else if (!group.empty()) {
      units.push_back(std::move(group));
    }
  }
  return units;
}

}  // namespace distrt::ps_client_internal
