#include "deploy/launcher/local_job_security.h"

#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rpc/tls_certificates.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt::launcher {
namespace {

// Long enough for a local job; a job that outlives it needs new files.
constexpr absl::Duration kValidFor = absl::Hours(24 * 30);

// What `path` is when it exists and this process did not just make it:
// launch's own only if owned by this user and closed to everybody else.
// Anything else (another user's, a symbolic link, a loose mode) may have
// been planted to read or choose the job's secrets, so launch refuses it
// rather than writing into it.
absl::Status CheckOwnPrivate(const std::string& path, const struct stat& info,
                             bool want_directory) {
  auto refuse = [&](absl::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--secure: ", path, " is already there and ", why,
        ": launch keeps its secrets only in files it made; remove it (or "
        "choose another --job_dir)"));
  };
  if (S_ISLNK(info.st_mode)) return refuse("is a symbolic link");
  if (want_directory != S_ISDIR(info.st_mode)) {
    return refuse(want_directory ? "is not a directory"
                                 : "is not a regular file");
  }
  if (info.st_uid != geteuid()) {
    return refuse(
        absl::StrCat("is owned by uid ", info.st_uid, ", not ", geteuid()));
  }
  if ((info.st_mode & 077) != 0) {
    return refuse(absl::StrFormat("has mode %04o, open to group or others",
                                  info.st_mode & 07777));
  }
  return absl::OkStatus();
}

// A directory only this user can enter: made 0700, or one left by an
// earlier launch of the same job dir that passes CheckOwnPrivate.
absl::Status MakePrivateDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0700) == 0) {
    // The umask may have taken bits from 0700, never added any; set it
    // exactly all the same.
    if (chmod(path.c_str(), 0700) != 0) {
      return ErrnoError("cannot chmod", path);
    }
    return absl::OkStatus();
  }
  if (errno != EEXIST) return ErrnoError("cannot create", path);
  struct stat info;
  if (lstat(path.c_str(), &info) != 0) return ErrnoError("cannot stat", path);
  return CheckOwnPrivate(path, info, /*want_directory=*/true);
}

absl::StatusOr<std::string> WriteToken(const std::string& dir) {
  unsigned char random[32];
  if (RAND_bytes(random, sizeof(random)) != 1) {
    return absl::InternalError("cannot make a random cluster token");
  }
  const std::string token = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(random), sizeof(random)));
  const std::string path = JoinPath(dir, "token");
  struct stat info;
  if (lstat(path.c_str(), &info) == 0) {
    RETURN_IF_ERROR(CheckOwnPrivate(path, info, /*want_directory=*/false));
  } else if (errno != ENOENT) {
    return ErrnoError("cannot stat", path);
  }
  // A new file renamed over any old one: its mode is exactly 0600 whatever
  // was there before.
  AtomicFileWriter::Options options;
  options.mode = 0600;
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                   AtomicFileWriter::Create(path, options));
  RETURN_IF_ERROR(file->Append(token + "\n"));
  RETURN_IF_ERROR(file->Commit());
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
