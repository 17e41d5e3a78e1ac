#ifndef DISTRT_CLIENT_VARIABLE_COMMANDS_H_
#define DISTRT_CLIENT_VARIABLE_COMMANDS_H_

// `distctl vars`, `pull`, `save` and `restore`: the variables of a running
// cluster, through PsClient. Each prints to `out` and returns the process
// exit status: 0 on success, 1 when the cluster refused or did not answer
// or the request failed (the error is printed to `err`, as
// DescribeFailure says: "distctl: refused (...)", "distctl: unreachable
// (...)", or "distctl: " and the error).

#include <cstdint>
#include <cstdio>
#include <string>

#include "client/ps_client.h"

namespace distrt {

// Where a command prints.
struct CommandOutput {
  std::FILE* out = stdout;
  std::FILE* err = stderr;
  // Whether the client has TLS (--tls_*): the advice on a refusal differs.
  bool client_uses_tls = false;
};

// One line per variable (shape, dtype, bytes with optimizer slots, which ps
// task holds which rows) and per hash table (rows and bytes per task).
int RunVarsCommand(PsClient& client, const CommandOutput& output);

// A variable's values when it has at most `max_values` elements; otherwise
// its shape, min / max / mean and first values.
int RunPullCommand(PsClient& client, const std::string& name, int max_values,
                   const CommandOutput& output);

// Saves checkpoint `step` (when negative: the value of the int64 variable
// "global_step", or 0 without one) under `directory`, keeping `keep_last`.
int RunSaveCommand(PsClient& client, const std::string& directory, int64_t step,
                   int keep_last, const CommandOutput& output);

int RunRestoreCommand(PsClient& client, const std::string& directory,
                      const CommandOutput& output);

}  // namespace distrt

#endif  // DISTRT_CLIENT_VARIABLE_COMMANDS_H_
