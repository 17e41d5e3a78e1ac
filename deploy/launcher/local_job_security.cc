#include "deploy/launcher/local_job_security.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "rpc/tls_certificates.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt::launcher {
namespace {

// Long enough for a local job; a job that outlives it needs new files.
constexpr absl::Duration kValidFor = absl::Hours(24 * 30);

absl::Status MakePrivateDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError("cannot create", path);
  }
  if (chmod(path.c_str(), 0700) != 0) return ErrnoError("cannot chmod", path);
  return absl::OkStatus();
}

absl::StatusOr<std::string> WriteToken(const std::string& dir) {
  unsigned char random[32];
  if (RAND_bytes(random, sizeof(random)) != 1) {
    return absl::InternalError("cannot make a random cluster token");
  }
  const std::string token = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(random), sizeof(random)));
  const std::string path = JoinPath(dir, "token");
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
           0600);
  if (fd < 0) return ErrnoError("cannot create", path);
  const std::string text = token + "\n";
  const bool written =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved_errno = errno;
  close(fd);
  if (!written) {
    errno = saved_errno;
    return ErrnoError("cannot write", path);
  }
  return path;
}

// The names a task's peers may dial it by: its host in the cluster spec,
// and loopback's (the job runs on this machine).
std::vector<std::string> HostsOf(const LaunchTask& task) {
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
  absl::StatusOr<HostPort> address = ParseTaskAddress(task.address);
  if (address.ok()) {
    std::string host = address->host;
    if (host.size() > 2 && host.front() == '[') {
      host = host.substr(1, host.size() - 2);  // "[::1]" -> "::1"
    }
    if (host != "localhost" && host != "127.0.0.1" && host != "::1") {
      hosts.push_back(host);
    }
  }
  return hosts;
}

}  // namespace

absl::StatusOr<std::vector<rpc::TransportSecurityOptions>> MakeLocalJobSecurity(
    const std::string& security_dir, const std::vector<LaunchTask>& tasks) {
  RETURN_IF_ERROR(MakePrivateDirectory(security_dir));
  ASSIGN_OR_RETURN(std::string token, WriteToken(security_dir));
  ASSIGN_OR_RETURN(
      rpc::PemKeyPair ca,
      rpc::GenerateCertificateAuthority(
          absl::StrCat("distrt local job CA ", getpid()), kValidFor));
  std::vector<rpc::TransportSecurityOptions> result;
  for (const LaunchTask& task : tasks) {
    absl::StatusOr<rpc::PemKeyPair> certificate =
        rpc::IssueCertificate(ca, task.label(), HostsOf(task), kValidFor);
    if (!certificate.ok()) {
      return absl::Status(certificate.status().code(),
                          absl::StrCat("certificate of ", task.label(), ": ",
                                       certificate.status().message()));
    }
    const std::string dir = JoinPath(security_dir, task.file_stem());
    RETURN_IF_ERROR(MakePrivateDirectory(dir));
    ASSIGN_OR_RETURN(rpc::TlsFilePaths files,
                     rpc::WriteTlsFiles(dir, ca, *certificate));
    rpc::TransportSecurityOptions options;
    options.tls_cert_file = files.cert_file;
    options.tls_key_file = files.key_file;
    options.tls_ca_file = files.ca_file;
    options.cluster_token_file = token;
    result.push_back(std::move(options));
  }
  return result;
}

}  // namespace distrt::launcher
