// The dense family of //bench: how fast PsClient pushes and pulls a whole
// float32 variable through real ps_server processes, against two transports
// measured in the same run on the same byte counts:
//
//   ps               PsClient::Push / Pull of a [rows, 256] variable (SGD) on
//                    1 or 2 ps_server processes; with 2 the variable is split
//                    by rows (FixedShards(2)) and both halves travel at once;
//   grpc_bytebuffer  one bare gRPC unary call carrying the bytes as a
//                    zero-copy ByteBuffer (bench/grpc_bytebuffer_baseline.h),
//                    to one server in this process;
//   raw_tcp          loopback TCP on one connection: payload then 1-byte ack,
//                    or 8-byte request then payload (bench/tcp_baseline.h).
//
// Each case (operation, ps tasks, size) times its contenders one after the
// other, the first rotating from case to case (TimeContenders). After the
// pulls of each size, the variable is checked against the value its pushes
// must have given it.

#include "bench/dense_transport_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "bench/bench_family.h"
#include "bench/bench_ps_cluster.h"
#include "bench/bench_report.h"
#include "bench/call_timer.h"
#include "bench/grpc_bytebuffer_baseline.h"
#include "bench/tcp_baseline.h"
#include "client/ps_client.h"
#include "rpc/tls_certificates.h"
#include "rpc/transport_security.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/initializer.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
// Floats per row: a row is 1 KiB, so every payload size is whole rows.
constexpr int64_t kRowWidth = 256;
constexpr int64_t kRowBytes = kRowWidth * int64_t{sizeof(float)};
// The ps tasks' message limit (ps_server --max_message_mb; 256 is also its
// default, explicit since the bench relies on it): far above the largest
// payload, so that no request is refused whatever PsClient sends.
constexpr int64_t kMaxMessageMiB = 256;
// PsClient cuts a push or pull into requests of at most max_request_bytes
// itself; the bench measures it as configured by default, only keeping each
// request (plus a little framing) below the servers' limit.
constexpr int64_t kRequestFraming = 1 * kMiB;
// Small, so that the variable stays far from overflow however many pushes
// the timing makes; the check after the pulls uses both.
constexpr float kLearningRate = 1e-4f;
constexpr float kGradient = 1e-3f;

// PsClient over gRPC, PsClient over the TCP data plane, the baselines.
enum Contender { kPs, kPsDataPlane, kGrpc, kTcp, kNumContenders };
enum class Op { kPush, kPull };

std::string SizeName(int64_t bytes) {
  if (bytes % kMiB == 0) return absl::StrCat(bytes / kMiB, "MiB");
  if (bytes % kKiB == 0) return absl::StrCat(bytes / kKiB, "KiB");
  return absl::StrCat(bytes, "B");
}

absl::Status InCase(const std::string& name, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(name, ": ", status.message()));
}

// Both baselines, started once for the whole family. The clients are
// declared after the servers, so that they are destroyed first.
struct Baselines {
  std::unique_ptr<GrpcBaselineServer> grpc_server;
  std::unique_ptr<TcpBaselineServer> tcp_server;
  std::unique_ptr<GrpcBaselineClient> grpc;
  std::unique_ptr<TcpBaselineClient> tcp;
};

absl::StatusOr<Baselines> StartBaselines(int64_t max_bytes) {
  Baselines b;
  GrpcBaselineServer::Options grpc_options;
  grpc_options.max_pull_bytes = max_bytes;
  ASSIGN_OR_RETURN(std::unique_ptr<GrpcBaselineServer> grpc_server,
                   GrpcBaselineServer::Start(grpc_options));
  b.grpc_server = std::move(grpc_server);
  b.grpc = GrpcBaselineClient::Create(b.grpc_server->address(),
                                      GrpcBaselineClient::Options());

  TcpBaselineOptions tcp_options;
  tcp_options.max_bytes = max_bytes;
  ASSIGN_OR_RETURN(std::unique_ptr<TcpBaselineServer> tcp_server,
                   TcpBaselineServer::Start(tcp_options));
  b.tcp_server = std::move(tcp_server);
  ASSIGN_OR_RETURN(
      std::unique_ptr<TcpBaselineClient> tcp,
      TcpBaselineClient::Connect(b.tcp_server->port(), tcp_options));
  b.tcp = std::move(tcp);
  return b;
}

// A [bytes / 1 KiB, 256] float32 variable of zeros, updated by SGD at
// kLearningRate.
VariableSpec BenchVariable(std::string name, int64_t bytes) {
  VariableSpec spec;
  spec.name = std::move(name);
  spec.shape = {bytes / kRowBytes, kRowWidth};
  spec.initializer.kind = InitializerSpec::Kind::kZeros;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = kLearningRate;
  return spec;
}

// Every element of `pulled` must be what `pushes` SGD steps of kGradient
// from zero give: -pushes * lr * g, up to float rounding of the repeated
// subtraction (far below the tolerance for a few hundred steps).
absl::Status CheckPulled(absl::Span<const float> pulled, int64_t pushes) {
  const double expected = -static_cast<double>(pushes) * kLearningRate *
                          static_cast<double>(kGradient);
  const double tolerance = 1e-3 * std::abs(expected) + 1e-12;
  for (size_t i = 0; i < pulled.size(); ++i) {
    if (!(std::abs(pulled[i] - expected) <= tolerance)) {
      return absl::InternalError(absl::StrCat(
          "element ", i, " of the pulled variable is ", pulled[i], ", but ",
          pushes, " pushes of ", kGradient, " at learning rate ", kLearningRate,
          " give ", expected));
    }
  }
  return absl::OkStatus();
}

// One size on the cluster: a push case, then a pull case, each timing the
// three contenders; adds their rows and checks the variable.
absl::Status RunSize(BenchPsCluster& cluster, Baselines& baselines, int num_ps,
                     int64_t bytes, const TimingOptions& timing,
                     int* case_number, BenchReport* report) {
  const VariableSpec spec =
      BenchVariable(absl::StrCat("bench/dense/", SizeName(bytes)), bytes);
  const std::string size_case = absl::StrCat(num_ps, "ps/", SizeName(bytes));
  PsClient& client = *cluster.client;
  PsClient& data_plane = *cluster.data_plane_client;
  absl::StatusOr<VariablePlacement> placement = client.CreateVariable(
      spec, num_ps > 1 ? PartitionPolicy::FixedShards(num_ps)
                       : PartitionPolicy::None());
  if (!placement.ok()) return InCase("dense/" + size_case, placement.status());

  const size_t elements = static_cast<size_t>(bytes / sizeof(float));
  const std::vector<float> grad(elements, kGradient);
  std::vector<float> pulled(elements);
  // The baselines send the gradient's bytes and pull into a buffer of their
  // own, so that `pulled` holds only what the ps tasks sent.
  const absl::Span<const char> payload(
      reinterpret_cast<const char*>(grad.data()), bytes);
  std::vector<char> baseline_pulled(bytes);
  int64_t pushes = 0;

  for (Op op : {Op::kPush, Op::kPull}) {
    const bool push = op == Op::kPush;
    const std::string name =
        absl::StrCat("dense/", push ? "push" : "pull", "/", size_case);
    absl::StatusOr<std::vector<CallTimes>> times = TimeContenders(
        kNumContenders, (*case_number)++, timing,
        [&](int contender, int64_t) -> absl::Status {
          switch (contender) {
            case kPs:
            case kPsDataPlane: {
              PsClient& c = contender == kPs ? client : data_plane;
              if (push) {
                ++pushes;
                return c.Push(*placement, grad);
              }
              return c.Pull(*placement, absl::MakeSpan(pulled));
            }
            case kGrpc:
              return push ? baselines.grpc->Push(payload)
                          : baselines.grpc->Pull(
                                absl::MakeSpan(baseline_pulled));
            default:
              return push
                         ? baselines.tcp->Push(payload)
                         : baselines.tcp->Pull(absl::MakeSpan(baseline_pulled));
          }
        });
    if (!times.ok()) return InCase(name, times.status());
    const std::vector<CallTimes>& t = *times;
    const double bytes_per_call = static_cast<double>(bytes);
    for (Contender ps : {kPs, kPsDataPlane}) {
      const std::string row = ps == kPs ? name : name + "/data_plane";
      const double ps_gbps = t[ps].PerSecond(bytes_per_call) / 1e9;
      report->Add(row + "/vs_grpc", ps_gbps, "GB/s", "grpc_bytebuffer",
                  t[kGrpc].PerSecond(bytes_per_call) / 1e9);
      report->Add(row + "/vs_tcp", ps_gbps, "GB/s", "raw_tcp",
                  t[kTcp].PerSecond(bytes_per_call) / 1e9);
      report->Add(row + "/p50", absl::ToDoubleMicroseconds(t[ps].P50()), "us",
                  "grpc_bytebuffer",
                  absl::ToDoubleMicroseconds(t[kGrpc].P50()));
    }
  }
  if (absl::Status s = CheckPulled(pulled, pushes); !s.ok()) {
    return InCase("dense/pull/" + size_case, s);
  }
  return absl::OkStatus();
}

// The job's TLS files for one ps task on 127.0.0.1 under `dir` (made
// here), as `launch --secure` makes them, and a token file.
absl::StatusOr<rpc::TransportSecurityOptions> MakeTlsFiles(
    const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot make ", dir, ": ", error.message()));
  }
  ASSIGN_OR_RETURN(rpc::PemKeyPair ca, rpc::GenerateCertificateAuthority(
                                           "bench CA", absl::Hours(1)));
  ASSIGN_OR_RETURN(
      rpc::PemKeyPair task,
      rpc::IssueCertificate(ca, "bench task", {"127.0.0.1"}, absl::Hours(1)));
  ASSIGN_OR_RETURN(rpc::TlsFilePaths paths, rpc::WriteTlsFiles(dir, ca, task));
  rpc::TransportSecurityOptions files;
  files.tls_cert_file = paths.cert_file;
  files.tls_key_file = paths.key_file;
  files.tls_ca_file = paths.ca_file;
  files.cluster_token_file = JoinPath(dir, "token");
  // Private, as the tasks require of a token file.
  AtomicFileWriter::Options secret;
  secret.mode = 0600;
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> token,
                   AtomicFileWriter::Create(files.cluster_token_file, secret));
  RETURN_IF_ERROR(token->Append("bench-cluster-token-0123456789\n"));
  RETURN_IF_ERROR(token->Commit());
  return files;
}

// With the job's TLS and token on both: PsClient over gRPC against
// PsClient over the TCP data plane, 1 ps task.
absl::Status RunTlsSizes(const BenchConfig& config,
                         const std::vector<int64_t>& sizes,
                         PsClient::Options options, const TimingOptions& timing,
                         int* case_number, BenchReport* report) {
  ASSIGN_OR_RETURN(rpc::TransportSecurityOptions files,
                   MakeTlsFiles(JoinPath(config.scratch_dir, "dense_tls")));
  ASSIGN_OR_RETURN(options.security, rpc::TransportSecurity::Load(files));
  const std::vector<std::string> ps_flags = {
      absl::StrCat("--max_message_mb=", kMaxMessageMiB),
      "--tls_cert=" + files.tls_cert_file, "--tls_key=" + files.tls_key_file,
      "--tls_ca=" + files.tls_ca_file,
      "--cluster_token_file=" + files.cluster_token_file};
  absl::StatusOr<BenchPsCluster> cluster =
      StartBenchPsCluster(1, ps_flags, options);
  if (!cluster.ok()) {
    return InCase("starting a ps task with TLS", cluster.status());
  }
  for (int64_t bytes : sizes) {
    const VariableSpec spec =
        BenchVariable(absl::StrCat("bench/dense_tls/", SizeName(bytes)), bytes);
    ASSIGN_OR_RETURN(VariablePlacement placement,
                     cluster->client->CreateVariable(spec));
    const size_t elements = static_cast<size_t>(bytes / sizeof(float));
    const std::vector<float> grad(elements, kGradient);
    std::vector<float> pulled(elements);
    int64_t pushes = 0;
    for (Op op : {Op::kPush, Op::kPull}) {
      const bool push = op == Op::kPush;
      const std::string name = absl::StrCat("dense/", push ? "push" : "pull",
                                            "/1ps/", SizeName(bytes), "/tls");
      absl::StatusOr<std::vector<CallTimes>> times = TimeContenders(
          2, (*case_number)++, timing,
          [&](int contender, int64_t) -> absl::Status {
            PsClient& c =
                contender == 0 ? *cluster->client : *cluster->data_plane_client;
            if (push) {
              ++pushes;
              return c.Push(placement, grad);
            }
            return c.Pull(placement, absl::MakeSpan(pulled));
          });
      if (!times.ok()) return InCase(name, times.status());
      const double bytes_per_call = static_cast<double>(bytes);
      report->Add(name + "/data_plane/vs_tls_grpc",
                  (*times)[1].PerSecond(bytes_per_call) / 1e9, "GB/s",
                  "ps_tls_grpc", (*times)[0].PerSecond(bytes_per_call) / 1e9);
    }
    if (absl::Status s = CheckPulled(pulled, pushes); !s.ok()) {
      return InCase(absl::StrCat("dense/pull/1ps/", SizeName(bytes), "/tls"),
                    s);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunDenseTransportBench(const BenchConfig& config,
                                    BenchReport* report) {
  report->BeginFamily(
      "dense: PsClient push and pull of a whole float32 variable through "
      "ps_server processes",
      "GB/s rows (1e9 bytes/s): ratio > 1 is better (faster than the "
      "baseline); /p50 rows (us per call): ratio < 1 is better");
  const std::vector<int64_t> sizes =
      config.quick
          ? std::vector<int64_t>{1 * kMiB, 16 * kMiB}
          : std::vector<int64_t>{4 * kKiB, 1 * kMiB, 16 * kMiB, 64 * kMiB};
  TimingOptions timing;
  timing.warmup_calls = 2;
  timing.min_time = config.quick ? absl::Milliseconds(300) : absl::Seconds(1);
  timing.max_calls = 200;
  timing.min_calls = 3;
  report->Note(
      "ps: variable [bytes/1 KiB, 256] float32, SGD; with 2 ps split by rows "
      "over both (FixedShards(2)), the halves sent at once; rows without a "
      "transport go over gRPC, */data_plane/* rows over the ps tasks' TCP "
      "data planes (rpc_layer grpc+tcp). "
      "grpc_bytebuffer: one unary call to a bare generic gRPC server in this "
      "process, payload a zero-copy ByteBuffer (pull: copied once into the "
      "caller's buffer, as PsClient::Pull must). raw_tcp: one loopback "
      "connection, push = payload then 1-byte ack, pull = 8-byte request "
      "then payload.");
  report->Note(absl::StrCat(
      "per case and contender: ", timing.warmup_calls,
      " warm-up calls, then calls until ",
      absl::FormatDuration(timing.min_time), " or ", timing.max_calls,
      " calls (at least ", timing.min_calls,
      "); GB/s = bytes x calls / time; p50 of the calls' times; contenders "
      "take turns at going first"));

  int64_t max_bytes = 0;
  for (int64_t bytes : sizes) max_bytes = std::max(max_bytes, bytes);
  ASSIGN_OR_RETURN(Baselines baselines, StartBaselines(max_bytes));

  PsClient::Options options;
  options.max_request_bytes = std::min(options.max_request_bytes,
                                       kMaxMessageMiB * kMiB - kRequestFraming);
  report->Note(absl::StrCat(
      "PsClient: default options, requests of at most ",
      SizeName(options.max_request_bytes),
      " over gRPC (max_request_bytes) and ",
      SizeName(options.data_plane_max_request_bytes),
      " over the data plane (data_plane_max_request_bytes); ps_server "
      "--max_message_mb=",
      kMaxMessageMiB));
  const std::vector<std::string> ps_flags = {
      absl::StrCat("--max_message_mb=", kMaxMessageMiB)};
  int case_number = 0;
  for (int num_ps : {1, 2}) {
    absl::StatusOr<BenchPsCluster> cluster =
        StartBenchPsCluster(num_ps, ps_flags, options);
    if (!cluster.ok()) {
      return InCase(absl::StrCat("starting ", num_ps, " ps task(s)"),
                    cluster.status());
    }
    for (int64_t bytes : sizes) {
      RETURN_IF_ERROR(RunSize(*cluster, baselines, num_ps, bytes, timing,
                              &case_number, report));
    }
  }
  report->Note(
      "*/tls/data_plane rows: one ps task and both clients with mutual TLS "
      "and a cluster token (as launch --secure); the data plane's TLS "
      "(OpenSSL) against gRPC's on the same task, in the same run");
  const std::vector<int64_t> tls_sizes =
      config.quick ? std::vector<int64_t>{16 * kMiB}
                   : std::vector<int64_t>{1 * kMiB, 16 * kMiB};
  return RunTlsSizes(config, tls_sizes, options, timing, &case_number, report);
}

}  // namespace distrt::bench
