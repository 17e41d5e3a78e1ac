#ifndef DISTRT_TESTS_UTIL_PS_PROCESSES_H_
#define DISTRT_TESTS_UTIL_PS_PROCESSES_H_

// Real ps_server processes on 127.0.0.1 for integration tests: each gets a
// TF_CONFIG naming it ps task i of n and --port=0, and the test learns the
// port from its start-up line. Destroying a PsProcess kills the process.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {

// Where the ps_server binary is in a test's runfiles tree; the test must
// list //ps_server in its data.
inline constexpr char kPsServerBinary[] = "ps_server/ps_server";

// The TF_CONFIG of ps task `index` in a cluster of one worker and `num_ps`
// ps tasks, with `rpc_layer` when it is not empty. Its ports are
// placeholders (tasks are started with --port=0).
std::string PsTfConfig(int index, int num_ps,
                       const std::string& rpc_layer = "");

struct PsProcess {
  std::unique_ptr<Subprocess> process;
  int index = 0;
  int port = 0;
  std::string incarnation;  // 16 hex digits, from the start-up line
  // Its TCP data plane's port (rpc_layer "grpc+tcp"), from its start-up
  // output; 0 without one.
  int data_plane_port = 0;

  std::string address() const;
};

// Starts ps task `index` of `num_ps` with `extra_flags` (and TF_CONFIG's
// `rpc_layer`) and waits for its start-up line, which it checks.
absl::StatusOr<PsProcess> StartPsProcess(
    int index, int num_ps, const std::vector<std::string>& extra_flags = {},
    const std::string& rpc_layer = "");

// Starts ps tasks 0..num_ps-1.
absl::StatusOr<std::vector<PsProcess>> StartPsProcesses(
    int num_ps, const std::vector<std::string>& extra_flags = {},
    const std::string& rpc_layer = "");

std::vector<std::string> AddressesOf(const std::vector<PsProcess>& tasks);

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_PS_PROCESSES_H_
