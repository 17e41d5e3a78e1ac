#ifndef DISTRT_CLIENT_PS_REQUEST_PLANNER_H_
#define DISTRT_CLIENT_PS_REQUEST_PLANNER_H_

// PsRequestPlanner: which requests carry an operation of PsClient (internal
// to client/): a variable's rows cut into the pieces its parts hold, each
// within max_request_bytes; PullMany / PushMany's small parts batched per ps
// task; sparse ids grouped by the part (or hash shard) that holds them,
// each distinct id once. It checks the caller's buffers before anything is
// sent. Nothing here touches the network.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "client/id_repeats.h"
#include "client/ps_calls.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/tensor/dtype.h"

namespace distrt::ps_client_internal {

class PsRequestPlanner {
 public:
  PsRequestPlanner(int num_tasks, int64_t max_request_bytes,
                   int64_t batch_below_bytes)
      : num_tasks_(num_tasks),
        max_request_bytes_(max_request_bytes),
        batch_below_bytes_(batch_below_bytes) {}

  // Pieces of `rows` of `variable`: one per part it overlaps, each cut into
  // requests of at most max_request_bytes.
  template <typename Request, typename Response>
  Calls<Request, Response> SplitRows(const VariablePlacement& variable,
                                     RowRange rows) const {
    const int64_t width = RowWidth(variable.spec);
    Calls<Request, Response> calls;
    ForEachPiece(variable, rows, [&](int ps_task, RowRange piece) {
      auto call = std::make_unique<Call<Request, Response>>(ps_task);
      SetRows(variable.spec.name, piece, &call->request);
      call->offset = (piece.begin - rows.begin) * width;
      calls.push_back(std::move(call));
    });
    return calls;
  }

  // Calls `piece(ps_task, rows)` for each piece of SplitRows, in order.
  template <typename Piece>
  void ForEachPiece(const VariablePlacement& variable, RowRange rows,
                    Piece piece) const {
    const int64_t row_bytes = std::max<int64_t>(
        1, RowWidth(variable.spec) * DTypeSize(variable.spec.dtype));
    const int64_t max_rows =
        std::max<int64_t>(1, max_request_bytes_ / row_bytes);
    for (const VariablePart& part : variable.parts) {
      const int64_t begin = std::max(rows.begin, part.rows.begin);
      const int64_t end = std::min(rows.end, part.rows.end);
      for (int64_t b = begin; b < end; b += max_rows) {
        piece(part.ps_task, RowRange{b, std::min(end, b + max_rows)});
      }
    }
  }

  absl::Status CheckRows(const VariablePlacement& variable, RowRange rows,
                         size_t buffer, absl::string_view what) const {
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

  // Checks an item of PullMany / PushMany: a float32 variable, and a buffer
  // of all its elements (as Pull and Push check it).
  absl::Status CheckManyItem(const VariablePlacement* variable, size_t index,
                             size_t buffer, absl::string_view what) const {
    if (variable == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("item ", index, " of the list has no variable"));
    }
    if (variable->spec.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable \"", variable->spec.name, "\" is ",
                       DTypeName(variable->spec.dtype),
                       "; PullMany and PushMany take float32 variables only"));
    }
    return CheckRows(*variable, {0, NumRows(variable->spec)}, buffer, what);
  }

  // The requests of PullMany / PushMany over whole `variables`. Per ps task:
  // its parts of at most batch_below_bytes (and max_request_bytes) in
  // batches of at most max_request_bytes, sent as `batch_rpc` (a batch of
  // one as `single_rpc`), then the other parts in SplitRows's pieces, sent
  // as `single_rpc`. The tasks' requests are interleaved, so that the first
  // ones in flight go to every task.
  std::vector<std::unique_ptr<ManyCall>> PlanMany(
      const std::vector<const VariablePlacement*>& variables,
      absl::string_view single_rpc, absl::string_view batch_rpc) const {
    const int n = num_tasks_;
    const auto bytes_of = [&](const DensePiece& piece) {
      return piece.rows.size() * RowWidth(variables[piece.variable]->spec) *
             int64_t{sizeof(float)};
    };
    // What an item of a batch costs beside its elements: its name, row
    // range, dtype and shape, with their tags and lengths (generously), so
    // that thousands of scalars still make requests within the limit.
    const auto item_bytes = [&](const DensePiece& piece) {
      return bytes_of(piece) + 64 +
             static_cast<int64_t>(variables[piece.variable]->spec.name.size()) +
             static_cast<int64_t>(10 *
                                  variables[piece.variable]->spec.shape.size());
    };
    const int64_t batch_limit =
        std::min(batch_below_bytes_, max_request_bytes_);
    std::vector<std::vector<DensePiece>> small(n);
    std::vector<std::vector<DensePiece>> large(n);
    for (size_t v = 0; v < variables.size(); ++v) {
      for (const VariablePart& part : variables[v]->parts) {
        const int64_t bytes = bytes_of({v, part.rows});
        if (bytes > 0 && bytes <= batch_limit) {
          small[part.ps_task].push_back({v, part.rows});
        } else {
          ForEachPiece(*variables[v], part.rows, [&](int task, RowRange rows) {
            large[task].push_back({v, rows});
          });
        }
      }
    }
    std::vector<std::vector<std::unique_ptr<ManyCall>>> by_task(n);
    for (int task = 0; task < n; ++task) {
      const std::vector<DensePiece>& pieces = small[task];
      for (size_t begin = 0; begin < pieces.size();) {
        size_t end = begin + 1;
        int64_t bytes = item_bytes(pieces[begin]);
        while (end < pieces.size() &&
               bytes + item_bytes(pieces[end]) <= max_request_bytes_) {
          bytes += item_bytes(pieces[end++]);
        }
        auto call = std::make_unique<ManyCall>(task);
        call->batch = end - begin > 1;
        call->pieces.assign(pieces.begin() + begin, pieces.begin() + end);
        by_task[task].push_back(std::move(call));
        begin = end;
      }
      for (const DensePiece& piece : large[task]) {
        by_task[task].push_back(std::make_unique<ManyCall>(task));
        by_task[task].back()->pieces.push_back(piece);
      }
    }
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
    for (auto& call : calls) {
      call->rpc = call->batch ? batch_rpc : single_rpc;
      const auto name = [&](size_t i) -> const std::string& {
        return variables[call->pieces[i].variable]->spec.name;
      };
      if (!call->batch) {
        call->about =
            absl::StrCat(" of ", RowsOf(name(0), call->pieces[0].rows));
        continue;
      }
      // Errors name the batch's variables, the first few of many.
      constexpr size_t kNamed = 4;
      std::vector<absl::string_view> names;
      for (size_t i = 0; i < call->pieces.size() && i < kNamed; ++i) {
        names.push_back(name(i));
      }
      call->about =
          absl::StrCat(" of \"", absl::StrJoin(names, "\", \""), "\"");
      if (call->pieces.size() > kNamed) {
        absl::StrAppend(&call->about, " and ", call->pieces.size() - kNamed,
                        " more");
      }
    }
    return calls;
  }

  int64_t MaxIdsPerRequest(int64_t width) const {
    return std::max<int64_t>(
        1, max_request_bytes_ /
               std::max<int64_t>(1, width * int64_t{sizeof(float)}));
  }

  template <typename Request, typename Response>
  absl::StatusOr<Calls<Request, Response>> GroupVariableIds(
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
      calls = GroupIds<Request, Response>(
          ids, repeats, max_ids, static_cast<int>(parts.size()), part_of,
          task_of_part, variable.spec.name);
    }
    if (calls.ok()) {
      for (auto& call : *calls) call->request.set_name(variable.spec.name);
    }
    return calls;
  }

  template <typename Request, typename Response>
  absl::StatusOr<Calls<Request, Response>> GroupHashIds(
      const HashEmbeddingSpec& table, absl::Span<const int64_t> ids,
      const IdRepeats& repeats) const {
    const int n = num_tasks_;
    auto calls = GroupIds<Request, Response>(
        ids, repeats, MaxIdsPerRequest(table.dim), n,
        [n](int64_t id) { return HashShardOf(id, n); },
        [](int shard) { return shard; }, table.name);
    if (calls.ok()) {
      for (auto& call : *calls) call->request.set_name(table.name);
    }
    return calls;
  }

 private:
  const int num_tasks_;
  const int64_t max_request_bytes_;
  const int64_t batch_below_bytes_;
};

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_REQUEST_PLANNER_H_
