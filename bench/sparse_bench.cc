// The sparse family of //bench: embedding rows pulled and pushed by id
// through two ps_server processes, in rows (ids) per second, for
//
//   dense  a [rows, dim] float32 variable split by rows over both tasks
//          (FixedShards(2)), through PsClient::PullSparse / PushSparse;
//   hash   a hash embedding table (a shard on each task), through
//          PsClient::PullHash / PushHash;
//
// each against one bare gRPC unary call per batch moving the same bytes (an
// 8-byte id and a 4*dim-byte row per id; bench/grpc_bytebuffer_baseline.h),
// counted in ids per second too.
//
// Ids are uniformly random in [0, rows), from a fixed seed: a pool of 1M ids
// per table size, which successive batches walk through, so that the timed
// calls of a case do not repeat ids until the pool wraps. Every table shape
// gets fresh ps processes, so that the memory of the previous tables is
// given back before the next is created.

#include "bench/sparse_bench.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "bench/bench_family.h"
#include "bench/bench_ps_cluster.h"
#include "bench/bench_report.h"
#include "bench/call_timer.h"
#include "bench/grpc_bytebuffer_baseline.h"
#include "client/ps_client.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/initializer.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

constexpr int kNumPs = 2;
// Ids per pool: a multiple of every batch size, so batches never straddle
// the wrap.
constexpr int64_t kPoolIds = 1000000;
// The hash table's warm-up pulls the pool in batches of this many ids.
constexpr int64_t kWarmupBatch = 100000;
constexpr uint64_t kSeed = 0x5eed5eedULL;
constexpr int64_t kGiB = int64_t{1} << 30;
// Tables of 10M rows need a few GiB (2.56 GB of values at dim 64, plus hash
// rows and both processes' overhead); below this much free memory they are
// skipped rather than risk the machine's other work.
constexpr int64_t kMinAvailableFor10M = 16 * kGiB;
constexpr float kLearningRate = 1e-4f;
constexpr float kGradient = 1e-3f;

// PsClient over gRPC, PsClient over the TCP data plane, the baseline.
enum Contender { kPs, kPsDataPlane, kGrpc, kNumContenders };
enum class Kind { kDense, kHash };

struct TableShape {
  int64_t rows = 0;
  int64_t dim = 0;
};

// 1000 -> "1k", 10000000 -> "10M".
std::string CountName(int64_t n) {
  if (n % 1000000 == 0) return absl::StrCat(n / 1000000, "M");
  if (n % 1000 == 0) return absl::StrCat(n / 1000, "k");
  return absl::StrCat(n);
}

absl::Status InCase(absl::string_view name, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(name, ": ", status.message()));
}

// MemAvailable of /proc/meminfo, in bytes.
absl::StatusOr<int64_t> MemAvailableBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  // Bounded by the file's few dozen lines.
  while (std::getline(meminfo, line)) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t kib = 0;
    if (fields.size() >= 2 && fields[0] == "MemAvailable:" &&
        absl::SimpleAtoi(fields[1], &kib)) {
      return kib * 1024;
    }
  }
  return absl::UnavailableError("no MemAvailable line in /proc/meminfo");
}

std::vector<int64_t> IdPool(int64_t rows) {
  std::mt19937_64 random(kSeed);
  std::uniform_int_distribution<int64_t> id(0, rows - 1);
  std::vector<int64_t> pool(kPoolIds);
  for (int64_t& v : pool) v = id(random);
  return pool;
}

// The tables of one shape, on ps processes of their own.
struct Tables {
  BenchPsCluster cluster;
  VariablePlacement dense;
  HashEmbeddingSpec hash;
};

absl::StatusOr<Tables> CreateTables(const TableShape& shape, bool with_hash,
                                    absl::Span<const int64_t> pool,
                                    BenchReport* report) {
  ASSIGN_OR_RETURN(BenchPsCluster cluster,
                   StartBenchPsCluster(kNumPs, {}, PsClient::Options()));
  Tables t;
  t.cluster = std::move(cluster);
  PsClient& client = *t.cluster.client;

  const absl::Time start = absl::Now();
  VariableSpec spec;
  spec.name = "bench/sparse/dense";
  spec.shape = {shape.rows, shape.dim};
  spec.initializer.kind = InitializerSpec::Kind::kZeros;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = kLearningRate;
  ASSIGN_OR_RETURN(
      VariablePlacement dense,
      client.CreateVariable(spec, PartitionPolicy::FixedShards(kNumPs)));
  t.dense = std::move(dense);
  if (!with_hash) return t;

  t.hash.name = "bench/sparse/hash";
  t.hash.dim = shape.dim;
  t.hash.initializer.kind = InitializerSpec::Kind::kZeros;
  t.hash.optimizer = spec.optimizer;
  RETURN_IF_ERROR(client.CreateHashTable(t.hash));
  // Rows of a hash table are created on first use; pulling the whole pool
  // once first means timed calls find every row they ask for, and time
  // lookups rather than insertions.
  std::vector<float> out(kWarmupBatch * shape.dim);
  for (int64_t at = 0; at < static_cast<int64_t>(pool.size());
       at += kWarmupBatch) {
    RETURN_IF_ERROR(client.PullHash(t.hash, pool.subspan(at, kWarmupBatch),
                                    absl::MakeSpan(out)));
  }
  report->Note(absl::StrCat(
      CountName(shape.rows), " rows, dim ", shape.dim,
      ": dense variable created, hash table warmed up (every id of the ",
      CountName(kPoolIds), "-id pool pulled once, in ",
      pool.size() / kWarmupBatch, " pulls of ", CountName(kWarmupBatch),
      ") in ",
      absl::FormatDuration(
          absl::Trunc(absl::Now() - start, absl::Milliseconds(1)))));
  return t;
}

// One table shape: every kind, batch size and operation, each case timing
// PsClient and the baseline.
absl::Status RunShape(const TableShape& shape, const std::vector<Kind>& kinds,
                      const std::vector<int64_t>& batches,
                      absl::Span<const int64_t> pool,
                      GrpcBaselineClient& baseline, const TimingOptions& timing,
                      int* case_number, BenchReport* report) {
  const std::string shape_name =
      absl::StrCat("dim", shape.dim, "/", CountName(shape.rows), "_rows");
  bool with_hash = false;
  for (Kind kind : kinds) with_hash |= kind == Kind::kHash;
  absl::StatusOr<Tables> tables = CreateTables(shape, with_hash, pool, report);
  if (!tables.ok()) return InCase("sparse/" + shape_name, tables.status());
  PsClient& grpc_client = *tables->cluster.client;
  PsClient& data_plane_client = *tables->cluster.data_plane_client;

  for (int64_t batch : batches) {
    const size_t values = static_cast<size_t>(batch * shape.dim);
    const std::vector<float> grads(values, kGradient);
    std::vector<float> out(values);
    // What one batch moves: its ids and their rows.
    const int64_t baseline_bytes = batch * (8 + 4 * shape.dim);
    const std::vector<char> payload(baseline_bytes, 1);
    std::vector<char> baseline_out(baseline_bytes);
    for (Kind kind : kinds) {
      for (bool push : {false, true}) {
        const std::string name =
            absl::StrCat("sparse/", push ? "push" : "pull", "/",
                         kind == Kind::kDense ? "dense" : "hash", "/",
                         shape_name, "/", CountName(batch), "_ids");
        absl::StatusOr<std::vector<CallTimes>> times = TimeContenders(
            kNumContenders, (*case_number)++, timing,
            [&](int contender, int64_t call_index) -> absl::Status {
              if (contender == kGrpc) {
                return push ? baseline.Push(payload)
                            : baseline.Pull(absl::MakeSpan(baseline_out));
              }
              const absl::Span<const int64_t> ids =
                  pool.subspan((call_index * batch) % kPoolIds, batch);
              PsClient& client =
                  contender == kPs ? grpc_client : data_plane_client;
              if (kind == Kind::kDense) {
                return push ? client.PushSparse(tables->dense, ids, grads)
                            : client.PullSparse(tables->dense, ids,
                                                absl::MakeSpan(out));
              }
              return push ? client.PushHash(tables->hash, ids, grads)
                          : client.PullHash(tables->hash, ids,
                                            absl::MakeSpan(out));
            });
        if (!times.ok()) return InCase(name, times.status());
        const double ids_per_call = static_cast<double>(batch);
        const double baseline = (*times)[kGrpc].PerSecond(ids_per_call);
        report->Add(name, (*times)[kPs].PerSecond(ids_per_call), "rows/s",
                    "grpc_bytebuffer", baseline);
        report->Add(name + "/data_plane",
                    (*times)[kPsDataPlane].PerSecond(ids_per_call), "rows/s",
                    "grpc_bytebuffer", baseline);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSparseBench(const BenchConfig& config, BenchReport* report) {
  report->BeginFamily(
      "sparse: embedding rows pulled and pushed by id through 2 ps_server "
      "processes",
      "rows/s (ids per second): ratio > 1 is better (faster than the "
      "baseline)");
  // Built whole rather than assigned, which GCC 12 misreads (-Wnonnull).
  std::vector<TableShape> shapes =
      config.quick
          ? std::vector<TableShape>{{1000000, 64}}
          : std::vector<TableShape>{
                {1000000, 16}, {1000000, 64}, {10000000, 16}, {10000000, 64}};
  const std::vector<int64_t> batches =
      config.quick ? std::vector<int64_t>{10000}
                   : std::vector<int64_t>{1000, 10000, 100000};
  const std::vector<Kind> kinds =
      config.quick ? std::vector<Kind>{Kind::kDense}
                   : std::vector<Kind>{Kind::kDense, Kind::kHash};
  if (config.quick) {
    report->Note("--quick: the dense variable only, 1M rows, dim 64, 10k ids");
  } else {
    absl::StatusOr<int64_t> available = MemAvailableBytes();
    if (!available.ok() || *available < kMinAvailableFor10M) {
      report->Note(absl::StrCat(
          "10M-row tables skipped: ",
          available.ok()
              ? absl::StrCat("MemAvailable is ", *available / kGiB, " GiB")
              : std::string(available.status().message()),
          ", under the ", kMinAvailableFor10M / kGiB, " GiB they need"));
      shapes.erase(std::remove_if(shapes.begin(), shapes.end(),
                                  [](const TableShape& shape) {
                                    return shape.rows > 1000000;
                                  }),
                   shapes.end());
    }
  }
  TimingOptions timing;
  timing.warmup_calls = 2;
  timing.min_time = absl::Milliseconds(500);
  timing.max_calls = 1000;
  timing.min_calls = 3;
  report->Note(absl::StrCat(
      "ps: SGD, zeros; PsClient over gRPC, and over the ps tasks' TCP data "
      "planes in */data_plane rows; ids uniform in [0, rows) from a fixed "
      "seed (a ",
      CountName(kPoolIds),
      "-id pool, walked batch after batch); baseline grpc_bytebuffer: one "
      "bare gRPC unary call per batch of 8 + 4*dim bytes per id (pull: a "
      "pull of that many bytes, push: a push), in ids/s. Per case and "
      "contender: ",
      timing.warmup_calls, " warm-up calls, then calls until ",
      absl::FormatDuration(timing.min_time), " or ", timing.max_calls,
      " calls (at least ", timing.min_calls, ")"));

  int64_t max_baseline_bytes = 0;
  for (const TableShape& shape : shapes) {
    for (int64_t batch : batches) {
      max_baseline_bytes =
          std::max(max_baseline_bytes, batch * (8 + 4 * shape.dim));
    }
  }
  GrpcBaselineServer::Options server_options;
  server_options.max_pull_bytes = max_baseline_bytes;
  ASSIGN_OR_RETURN(std::unique_ptr<GrpcBaselineServer> server,
                   GrpcBaselineServer::Start(server_options));
  std::unique_ptr<GrpcBaselineClient> baseline = GrpcBaselineClient::Create(
      server->address(), GrpcBaselineClient::Options());

  int case_number = 0;
  int64_t pool_rows = 0;
  std::vector<int64_t> pool;
  for (const TableShape& shape : shapes) {
    if (shape.rows != pool_rows) {
      pool = IdPool(shape.rows);
      pool_rows = shape.rows;
    }
    RETURN_IF_ERROR(RunShape(shape, kinds, batches, pool, *baseline, timing,
                             &case_number, report));
  }
  return absl::OkStatus();
}

}  // namespace distrt::bench
