#include "client/export_command.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/export/serving_export.h"
#include "runtime/util/format_bytes.h"

namespace distrt {

int RunExportCommand(const ExportCommandOptions& options, std::FILE* out,
                     std::FILE* err) {
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{
                                        "--checkpoint", &options.checkpoint},
                                    {"--out", &options.out}}) {
    if (value->empty()) {
      std::fprintf(err,
                   "distctl export: %s is missing; usage: distctl export "
                   "--checkpoint=DIR --out=DIR [--overwrite] "
                   "[--allow_uncommitted]\n",
                   flag);
      return 2;
    }
  }
  ServingExportOptions export_options;
  export_options.checkpoint = options.checkpoint;
  export_options.out_dir = options.out;
  export_options.overwrite = options.overwrite;
  export_options.allow_uncommitted = options.allow_uncommitted;
  const absl::Time start = absl::Now();
  absl::StatusOr<ServingExport> exported =
      ExportForServing(export_options, [out](absl::string_view line) {
        std::fprintf(out, "%s\n", std::string(line).c_str());
        std::fflush(out);
      });
  if (!exported.ok()) {
    std::fprintf(err, "distctl export: %s\n",
                 std::string(exported.status().message()).c_str());
    return 1;
  }
  int64_t rows = 0;
  for (const ExportedTable& table : exported->tables) rows += table.rows;
  std::fprintf(
      out, "%s\n",
      absl::StrCat(
          "exported step ", exported->step, ": ", exported->tables.size(),
          " hash table(s) (", rows, " rows), ", exported->variables.size(),
          " variable(s), ", FormatBytes(exported->bytes), " in ",
          absl::FormatDuration(
              absl::Trunc(absl::Now() - start, absl::Milliseconds(1))),
          " to ", exported->out_dir, " (manifest: ", kExportManifestName, ")")
          .c_str());
  return 0;
}

}  // namespace distrt
