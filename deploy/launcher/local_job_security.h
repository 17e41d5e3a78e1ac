#ifndef DISTRT_DEPLOY_LAUNCHER_LOCAL_JOB_SECURITY_H_
#define DISTRT_DEPLOY_LAUNCHER_LOCAL_JOB_SECURITY_H_

// `launch --secure`: everything a local job needs for mutual TLS and a
// cluster token, made up for the job and thrown away with it. A new CA
// (whose key is never written: nobody can issue more certificates), one
// certificate per task naming its host (and loopback's names), and a random
// token, under <job dir>/security (mode 0700):
//
//   security/token                 the cluster token (0600)
//   security/ps-0/ca.pem cert.pem key.pem    one directory per task
//
// For a real cluster, make the CA and certificates with your own tools and
// give every task --tls_cert/--tls_key/--tls_ca (docs/security.md).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deploy/launcher/job_plan.h"
#include "rpc/transport_security.h"

namespace distrt::launcher {

// Writes the files for `tasks` under `security_dir` (created, 0700) and
// returns each task's flags' values, in the order of `tasks`. Errors name
// the file or the task.
absl::StatusOr<std::vector<rpc::TransportSecurityOptions>> MakeLocalJobSecurity(
    const std::string& security_dir, const std::vector<LaunchTask>& tasks);

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_LOCAL_JOB_SECURITY_H_
