#include "tests/util/ps_processes.h"

#include <regex>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt::testing {
namespace {

const absl::Duration kStartTimeout = absl::Seconds(30);

}  // namespace

std::string PsTfConfig(int index, int num_ps, const std::string& rpc_layer) {
  std::string ps;
  for (int i = 0; i < num_ps; ++i) {
    absl::StrAppend(&ps, i == 0 ? "" : ",", "\"127.0.0.1:", i + 2, "\"");
  }
  return absl::StrCat(R"({"cluster":{"worker":["127.0.0.1:1"],"ps":[)", ps,
                      R"(]},"task":{"type":"ps","index":)", index, "}",
                      rpc_layer.empty()
                          ? ""
                          : absl::StrCat(R"(,"rpc_layer":")", rpc_layer, "\""),
                      "}");
}

std::string PsProcess::address() const {
  return absl::StrCat("127.0.0.1:", port);
}

absl::StatusOr<PsProcess> StartPsProcess(
    int index, int num_ps, const std::vector<std::string>& extra_flags,
    const std::string& rpc_layer) {
  SubprocessOptions options;
  options.argv = {kPsServerBinary, "--port=0", "--bind_host=127.0.0.1"};
  options.argv.insert(options.argv.end(), extra_flags.begin(),
                      extra_flags.end());
  options.env["TF_CONFIG"] = PsTfConfig(index, num_ps, rpc_layer);
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> process,
                   Subprocess::Start(options));
  PsProcess ps;
  ps.process = std::move(process);
  ps.index = index;
  ASSIGN_OR_RETURN(std::string line, ps.process->ReadStdoutLine(kStartTimeout));
  std::smatch match;
  const std::regex start_line(
      "ps_server: ps task ([0-9]+) serving on 127\\.0\\.0\\.1:([0-9]+) "
      "\\(cluster address 127\\.0\\.0\\.1:[0-9]+\\), incarnation "
      "([0-9a-f]{16}), (no TLS|mutual TLS), (no )?cluster token");
  if (!std::regex_match(line, match, start_line) ||
      std::stoi(match[1]) != index) {
    return absl::InternalError(absl::StrCat(
        "unexpected start-up line of ps task ", index, ": ", line));
  }
  ps.port = std::stoi(match[2]);
  ps.incarnation = match[3];
  if (rpc_layer == "grpc+tcp") {
    ASSIGN_OR_RETURN(line, ps.process->ReadStdoutLine(kStartTimeout));
    const std::regex data_plane_line(
        "ps_server: tensors also over the TCP data plane on "
        "127\\.0\\.0\\.1:([0-9]+) \\(rpc_layer \"grpc\\+tcp\"\\), "
        "(no TLS|mutual TLS), (no )?cluster token");
    if (!std::regex_match(line, match, data_plane_line)) {
      return absl::InternalError(absl::StrCat(
          "unexpected data plane line of ps task ", index, ": ", line));
    }
    ps.data_plane_port = std::stoi(match[1]);
  }
  return ps;
}

absl::StatusOr<std::vector<PsProcess>> StartPsProcesses(
    int num_ps, const std::vector<std::string>& extra_flags,
    const std::string& rpc_layer) {
  std::vector<PsProcess> tasks;
  for (int i = 0; i < num_ps; ++i) {
    ASSIGN_OR_RETURN(PsProcess ps,
                     StartPsProcess(i, num_ps, extra_flags, rpc_layer));
    tasks.push_back(std::move(ps));
  }
  return tasks;
}

std::vector<std::string> AddressesOf(const std::vector<PsProcess>& tasks) {
  std::vector<std::string> addresses;
  for (const PsProcess& ps : tasks) addresses.push_back(ps.address());
  return addresses;
}

}  // namespace distrt::testing
