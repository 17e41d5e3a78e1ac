#ifndef DISTRT_CLIENT_EXPORT_COMMAND_H_
#define DISTRT_CLIENT_EXPORT_COMMAND_H_

// `distctl export --checkpoint=DIR --out=DIR`: a trained job's hash tables
// and variables, from a committed checkpoint, as .npy files and a manifest
// that a serving system loads without this runtime
// (runtime/export/serving_export.h; docs/export.md). It reads files only:
// no cluster, no TF_CONFIG.

#include <cstdio>
#include <string>

namespace distrt {

struct ExportCommandOptions {
  std::string checkpoint;          // --checkpoint
  std::string out;                 // --out
  bool overwrite = false;          // --overwrite
  bool allow_uncommitted = false;  // --allow_uncommitted
};

// Prints a line per table and variable to `out` as it is written, then a
// summary; errors to `err`, "distctl export: <what, naming the path>".
// Returns the exit status: 0 done, 1 when the export failed (a missing,
// uncommitted or damaged checkpoint, an occupied output directory, a file
// system error), 2 when --checkpoint or --out is missing.
int RunExportCommand(const ExportCommandOptions& options, std::FILE* out,
                     std::FILE* err);

}  // namespace distrt

#endif  // DISTRT_CLIENT_EXPORT_COMMAND_H_
