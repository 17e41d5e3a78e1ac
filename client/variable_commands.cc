#include "client/variable_commands.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/failure_description.h"
#include "runtime/util/format_bytes.h"

namespace distrt {
namespace {

int Failed(const absl::Status& status, const CommandOutput& output) {
  std::fprintf(output.err, "distctl: %s\n",
               DescribeFailure(status, output.client_uses_tls).c_str());
  return 1;
}

std::string PlacementString(const VariablePlacement& placement) {
  if (placement.parts.size() == 1) {
    return absl::StrCat("ps ", placement.parts[0].ps_task);
  }
  std::vector<std::string> parts;
  for (const VariablePart& part : placement.parts) {
    parts.push_back(absl::StrCat("rows ", part.rows.begin, "-", part.rows.end,
                                 " on ps ", part.ps_task));
  }
  return absl::StrJoin(parts, ", ");
}

template <typename T>
void PrintValues(const std::vector<T>& values, int max_values, std::FILE* out) {
  const size_t shown = std::min<size_t>(values.size(), max_values);
  std::vector<std::string> text;
  for (size_t i = 0; i < shown; ++i) text.push_back(absl::StrCat(values[i]));
  if (values.size() <= static_cast<size_t>(max_values)) {
    std::fprintf(out, "values: [%s]\n", absl::StrJoin(text, ", ").c_str());
    return;
  }
  double sum = 0;
  for (T v : values) sum += static_cast<double>(v);
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  std::fprintf(out, "min %s  max %s  mean %s\n", absl::StrCat(*min).c_str(),
               absl::StrCat(*max).c_str(),
               absl::StrCat(sum / values.size()).c_str());
  std::fprintf(out, "first %zu of %zu values: [%s, ...]\n", shown,
               values.size(), absl::StrJoin(text, ", ").c_str());
}

}  // namespace

int RunVarsCommand(PsClient& client, const CommandOutput& output) {
  std::FILE* const out = output.out;
  std::vector<DistributedVariableInfo> variables;
  std::vector<DistributedHashTableInfo> tables;
  if (absl::Status s = client.List(&variables, &tables); !s.ok()) {
    return Failed(s, output);
  }
  if (variables.empty() && tables.empty()) {
    std::fprintf(out, "no variables on the %d ps tasks\n",
                 client.num_ps_tasks());
    return 0;
  }
  std::fprintf(out, "%-28s %-16s %-8s %-11s %s\n", "NAME", "SHAPE", "DTYPE",
               "BYTES", "PLACEMENT");
  for (const DistributedVariableInfo& v : variables) {
    int64_t bytes = 0;
    for (int64_t b : v.part_bytes) bytes += b;
    const VariableSpec& spec = v.placement.spec;
    std::fprintf(out, "%-28s %-16s %-8s %-11s %s\n", spec.name.c_str(),
                 ShapeString(spec.shape).c_str(),
                 std::string(DTypeName(spec.dtype)).c_str(),
                 FormatBytes(bytes).c_str(),
                 PlacementString(v.placement).c_str());
  }
  for (const DistributedHashTableInfo& t : tables) {
    int64_t bytes = 0;
    std::vector<std::string> rows;
    for (size_t task = 0; task < t.rows_per_task.size(); ++task) {
      bytes += t.bytes_per_task[task];
      rows.push_back(absl::StrCat(t.rows_per_task[task], " rows on ps ", task));
    }
    std::fprintf(out, "%-28s %-16s %-8s %-11s hash table: %s\n",
                 t.spec.name.c_str(),
                 absl::StrCat("[?, ", t.spec.dim, "]").c_str(), "float32",
                 FormatBytes(bytes).c_str(), absl::StrJoin(rows, ", ").c_str());
  }
  std::fprintf(out, "(bytes include optimizer slots)\n");
  return 0;
}

int RunPullCommand(PsClient& client, const std::string& name, int max_values,
                   const CommandOutput& output) {
  std::FILE* const out = output.out;
  absl::StatusOr<VariablePlacement> variable = client.LookupVariable(name);
  if (!variable.ok()) return Failed(variable.status(), output);
  const VariableSpec& spec = variable->spec;
  const int64_t elements = NumRows(spec) * RowWidth(spec);
  std::fprintf(out, "%s: %s %s on %s\n", name.c_str(),
               std::string(DTypeName(spec.dtype)).c_str(),
               ShapeString(spec.shape).c_str(),
               PlacementString(*variable).c_str());
  if (spec.dtype == DType::kInt64) {
    std::vector<int64_t> values(elements);
    if (absl::Status s = client.PullInt64(*variable, absl::MakeSpan(values));
        !s.ok()) {
      return Failed(s, output);
    }
    PrintValues(values, max_values, out);
    return 0;
  }
  std::vector<float> values(elements);
  if (absl::Status s = client.Pull(*variable, absl::MakeSpan(values));
      !s.ok()) {
    return Failed(s, output);
  }
  PrintValues(values, max_values, out);
  return 0;
}

int RunSaveCommand(PsClient& client, const std::string& directory, int64_t step,
                   int keep_last, const CommandOutput& output) {
  std::FILE* const out = output.out;
  if (step < 0) {
    step = 0;
    absl::StatusOr<VariablePlacement> global_step =
        client.LookupVariable("global_step");
    if (global_step.ok() && global_step->spec.dtype == DType::kInt64 &&
        NumRows(global_step->spec) * RowWidth(global_step->spec) == 1) {
      if (absl::Status s =
              client.PullInt64(*global_step, absl::MakeSpan(&step, 1));
          !s.ok()) {
        return Failed(s, output);
      }
    } else if (!global_step.ok() && !absl::IsNotFound(global_step.status())) {
      return Failed(global_step.status(), output);
    }
  }
  absl::StatusOr<CheckpointSaved> saved =
      client.Save(directory, step, keep_last);
  if (!saved.ok()) return Failed(saved.status(), output);
  std::fprintf(out, "saved step %lld to %s (%s in %d shards)\n",
               static_cast<long long>(step), saved->checkpoint.c_str(),
               FormatBytes(saved->bytes).c_str(), client.num_ps_tasks());
  for (const std::string& deleted : saved->deleted) {
    std::fprintf(out, "deleted old checkpoint %s\n", deleted.c_str());
  }
  return 0;
}

int RunRestoreCommand(PsClient& client, const std::string& directory,
                      const CommandOutput& output) {
  std::FILE* const out = output.out;
  absl::StatusOr<CheckpointRestored> restored = client.Restore(directory);
  if (!restored.ok()) return Failed(restored.status(), output);
  std::fprintf(out,
               "restored step %lld from %s: %lld variable parts, %lld hash "
               "table rows, on %d ps tasks\n",
               static_cast<long long>(restored->step),
               restored->checkpoint.c_str(),
               static_cast<long long>(restored->variables_restored),
               static_cast<long long>(restored->hash_table_rows_restored),
               client.num_ps_tasks());
  if (restored->variables_restored == 0 &&
      restored->hash_table_rows_restored == 0) {
    std::fprintf(out,
                 "note: nothing was restored because no variables exist on "
                 "the ps tasks yet; restore fills the variables the model "
                 "created (workers create them), it does not create them\n");
  }
  return 0;
}

}  // namespace distrt
