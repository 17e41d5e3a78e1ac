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
//
// Zipf traffic (hash_zipf1.1 cases): batches of 100k ids drawn Zipf(1.1)
// from a 10M-id vocabulary (bench/zipf_ids.h), as a click log gives them,
// repeats and all, to PullHash / PushHash, whose dedup (the worker's,
// client/id_repeats.h) sends each distinct id once: about 29k of the 100k.
// Their rows/s count those distinct rows, and their baseline moves the
// same bytes, 8 + 4*dim per distinct id, batch by batch. Then what the
// admission and eviction bookkeeping costs a table, in-process
// (bench/table_policy_bench.h).

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
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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
#include "bench/table_policy_bench.h"
#include "bench/zipf_ids.h"
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

// Zipf traffic: issue 48's exponent, batch and vocabulary.
constexpr int64_t kZipfVocabulary = 10000000;
constexpr double kZipfExponent = 1.1;
constexpr int64_t kZipfBatch = 100000;
constexpr uint64_t kZipfSeed = 0x21bf5eedULL;
constexpr char kZipfName[] = "hash_zipf1.1";

// Batches of Zipf draws that the timed calls of a case walk through, and
// how many distinct ids each has: what the dedup sends.
struct ZipfPool {
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> distinct;
  // What finding a batch's repeats (FindRepeats, which PsClient runs on
  // every pull and push) takes alone, in seconds: part of each call.
  double dedup_seconds = 0;
};

absl::StatusOr<ZipfPool> MakeZipfPool(int num_batches) {
  ASSIGN_OR_RETURN(ZipfIds zipf,
                   ZipfIds::Create(kZipfVocabulary, kZipfExponent, kZipfSeed));
  ZipfPool pool;
  for (int b = 0; b < num_batches; ++b) {
    std::vector<int64_t> batch(kZipfBatch);
    zipf.Fill(absl::MakeSpan(batch));
    pool.distinct.push_back(DistinctIds(batch).size());
    pool.batches.push_back(std::move(batch));
  }
  // Again, timed: the first pass allocated the thread's table.
  const absl::Time start = absl::Now();
  for (const std::vector<int64_t>& batch : pool.batches) DistinctIds(batch);
  pool.dedup_seconds = absl::ToDoubleSeconds(absl::Now() - start) / num_batches;
  return pool;
}

// The distinct rows that calls `first`.. `first + calls - 1` of a case move
// (call i sends batch i of the pool, wrapping).
int64_t DistinctInCalls(const ZipfPool& pool, int64_t first, int64_t calls) {
  int64_t rows = 0;
  for (int64_t i = first; i < first + calls; ++i) {
    rows += pool.distinct[i % pool.distinct.size()];
  }
  return rows;
}

int64_t MaxDistinct(const ZipfPool& pool) {
  return *std::max_element(pool.distinct.begin(), pool.distinct.end());
}

// Pull and push of one Zipf table through both clients and the baseline.
absl::Status RunZipfCase(const HashEmbeddingSpec& table, const ZipfPool& pool,
                         BenchPsCluster& cluster, GrpcBaselineClient& baseline,
                         const TimingOptions& timing, int* case_number,
                         BenchReport* report) {
  const int64_t dim = table.dim;
  const std::vector<float> grads(kZipfBatch * dim, kGradient);
  std::vector<float> out(kZipfBatch * dim);
  const int64_t row_bytes = 8 + 4 * dim;
  const std::vector<char> payload(MaxDistinct(pool) * row_bytes, 1);
  std::vector<char> baseline_out(payload.size());
  for (bool push : {false, true}) {
    const std::string name = absl::StrCat(
        "sparse/", push ? "push" : "pull", "/", kZipfName, "/dim", dim, "/",
        CountName(kZipfVocabulary), "_vocab/", CountName(kZipfBatch), "_ids");
    absl::StatusOr<std::vector<CallTimes>> times = TimeContenders(
        kNumContenders, (*case_number)++, timing,
        [&](int contender, int64_t call_index) -> absl::Status {
          const size_t b = call_index % pool.batches.size();
          if (contender == kGrpc) {
            const size_t bytes = pool.distinct[b] * row_bytes;
            return push ? baseline.Push(
                              absl::MakeConstSpan(payload).first(bytes))
                        : baseline.Pull(
                              absl::MakeSpan(baseline_out).first(bytes));
          }
          PsClient& client =
              contender == kPs ? *cluster.client : *cluster.data_plane_client;
          return push ? client.PushHash(table, pool.batches[b], grads)
                      : client.PullHash(table, pool.batches[b],
                                        absl::MakeSpan(out));
        });
    if (!times.ok()) return InCase(name, times.status());
    // Each contender's timed calls are the same ones (after the same
    // warm-up), so they move the same rows.
    auto rows_per_second = [&](const CallTimes& t) {
      const double seconds = absl::ToDoubleSeconds(t.total);
      if (t.calls == 0 || seconds <= 0) return 0.0;
      return DistinctInCalls(pool, timing.warmup_calls, t.calls) / seconds;
    };
    const double baseline_rows = rows_per_second((*times)[kGrpc]);
    report->Add(name, rows_per_second((*times)[kPs]), "rows/s",
                "grpc_bytebuffer", baseline_rows);
    report->Add(name + "/data_plane", rows_per_second((*times)[kPsDataPlane]),
                "rows/s", "grpc_bytebuffer", baseline_rows);
    report->Note(absl::StrFormat(
        "%s: per call (p50) %.2f ms over gRPC, %.2f ms over the data plane, "
        "%.2f ms bare gRPC; of a call, the dedup alone takes %.2f ms",
        name, absl::ToDoubleMilliseconds((*times)[kPs].P50()),
        absl::ToDoubleMilliseconds((*times)[kPsDataPlane].P50()),
        absl::ToDoubleMilliseconds((*times)[kGrpc].P50()),
        pool.dedup_seconds * 1e3));
  }
  return absl::OkStatus();
}

// The Zipf cases, on ps processes of their own: a hash table per dim,
// warmed up by pulling every batch of the pool once.
absl::Status RunZipfCases(const std::vector<int64_t>& dims,
                          const ZipfPool& pool, GrpcBaselineClient& baseline,
                          const TimingOptions& timing, int* case_number,
                          BenchReport* report) {
  absl::StatusOr<BenchPsCluster> cluster =
      StartBenchPsCluster(kNumPs, {}, PsClient::Options());
  if (!cluster.ok()) {
    return InCase(absl::StrCat("sparse/", kZipfName), cluster.status());
  }
  for (int64_t dim : dims) {
    HashEmbeddingSpec table;
    table.name = absl::StrCat("bench/sparse/", kZipfName, "/dim", dim);
    table.dim = dim;
    table.initializer.kind = InitializerSpec::Kind::kZeros;
    table.optimizer.kind = OptimizerKind::kSgd;
    table.optimizer.learning_rate = kLearningRate;
    RETURN_IF_ERROR(cluster->client->CreateHashTable(table));
    std::vector<float> out(kZipfBatch * dim);
    for (const std::vector<int64_t>& batch : pool.batches) {
      RETURN_IF_ERROR(
          cluster->client->PullHash(table, batch, absl::MakeSpan(out)));
    }
    RETURN_IF_ERROR(RunZipfCase(table, pool, *cluster, baseline, timing,
                                case_number, report));
  }
  return absl::OkStatus();
}

std::string DescribeZipfPool(const ZipfPool& pool,
                             const std::vector<int64_t>& dims) {
  int64_t total = 0;
  for (int64_t d : pool.distinct) total += d;
  const double mean = static_cast<double>(total) / pool.distinct.size();
  return absl::StrFormat(
      "%s cases: %d batches of %s ids drawn Zipf(%.1f) from a %s-id "
      "vocabulary (ranks mixed to 63-bit ids), walked call after call, each "
      "given whole to PullHash / PushHash, whose dedup sends %.0f distinct "
      "ids a batch on average (%d to %d, %.1f%% of the draws); rows/s count "
      "those distinct rows (ids/s = rows/s x %.2f), the baseline moves 8 + "
      "4*dim bytes per distinct id of the same batch; hash tables of dim %s "
      "(on 2 ps processes of their own), SGD, zeros, warmed up by pulling "
      "each batch once",
      kZipfName, pool.batches.size(), CountName(kZipfBatch), kZipfExponent,
      CountName(kZipfVocabulary), mean,
      *std::min_element(pool.distinct.begin(), pool.distinct.end()),
      MaxDistinct(pool), 100.0 * mean / kZipfBatch, kZipfBatch / mean,
      absl::StrJoin(dims, " and "));
}

// The table shapes of the uniform cases: those the machine has the memory
// for (saying which were skipped, and what --quick leaves out).
std::vector<TableShape> ShapesToRun(const BenchConfig& config,
                                    BenchReport* report) {
  if (config.quick) {
    report->Note(
        "--quick: the dense variable only, 1M rows, dim 64, 10k ids; Zipf at "
        "dim 16 only, over 4 batches, 200 ms a contender; the policy "
        "bookkeeping at max_rows 200k, 20 steps timed");
    return {{1000000, 64}};
  }
  // Built whole rather than assigned, which GCC 12 misreads (-Wnonnull).
  std::vector<TableShape> shapes = {
      {1000000, 16}, {1000000, 64}, {10000000, 16}, {10000000, 64}};
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
  return shapes;
}

}  // namespace

absl::Status RunSparseBench(const BenchConfig& config, BenchReport* report) {
  report->BeginFamily(
      "sparse: embedding rows pulled and pushed by id through 2 ps_server "
      "processes",
      "rows/s (ids per second): ratio > 1 is better (faster than the "
      "baseline)");
  const std::vector<TableShape> shapes = ShapesToRun(config, report);
  const std::vector<int64_t> batches =
      config.quick ? std::vector<int64_t>{10000}
                   : std::vector<int64_t>{1000, 10000, 100000};
  const std::vector<Kind> kinds =
      config.quick ? std::vector<Kind>{Kind::kDense}
                   : std::vector<Kind>{Kind::kDense, Kind::kHash};
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

  // Zipf: one batch pool, one dim and fewer calls under --quick.
  const std::vector<int64_t> zipf_dims =
      config.quick ? std::vector<int64_t>{16} : std::vector<int64_t>{16, 64};
  ASSIGN_OR_RETURN(const ZipfPool zipf_pool,
                   MakeZipfPool(config.quick ? 4 : 10));
  TimingOptions zipf_timing = timing;
  if (config.quick) zipf_timing.min_time = absl::Milliseconds(200);
  report->Note(DescribeZipfPool(zipf_pool, zipf_dims));

  int64_t max_baseline_bytes = 0;
  for (const TableShape& shape : shapes) {
    for (int64_t batch : batches) {
      max_baseline_bytes =
          std::max(max_baseline_bytes, batch * (8 + 4 * shape.dim));
    }
  }
  for (int64_t dim : zipf_dims) {
    max_baseline_bytes =
        std::max(max_baseline_bytes, MaxDistinct(zipf_pool) * (8 + 4 * dim));
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
  RETURN_IF_ERROR(RunZipfCases(zipf_dims, zipf_pool, *baseline, zipf_timing,
                               &case_number, report));
  return RunTablePolicyBench(config, report);
}

}  // namespace distrt::bench
