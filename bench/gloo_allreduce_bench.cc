// Cross-worker all-reduce bandwidth of the path a MultiWorkerMirroredStrategy
// training step takes, against Gloo's own AllreduceRingChunked driven
// directly, on the same ranks and sizes in the same run. Three contenders:
//
//   baseline    gloo::AllreduceRingChunked<float>, built once per size;
//   gloo_group  GlooGroup::AllReduceSum (gloo::allreduce): the cross-worker
//               collective under the strategy;
//   strategy    MultiWorkerAllReduce::AllReduce, as a training step calls
//               it: each of --local_replicas replicas of a rank calls from a
//               thread of its own with a tensor of its own; the replicas'
//               sum (the CrossDeviceOps the strategy picks for CPU devices)
//               goes across the ranks from replica 0 in buckets of
//               --bucket_bytes, and comes back to every replica.
//
// Ranks are threads of this process, connected over loopback TCP; each
// contender has its own connections, each pair of ranks its own sockets, as
// between processes. With --rank, this process is that one rank and the
// ranks are processes, as workers are (bench/cross_process_allreduce.py
// starts them, and PyTorch's all-reduce beside them): rank 0 serves the
// rendezvous store (RendezvousServer on 127.0.0.1, port chosen by the OS,
// printed as "rendezvous 127.0.0.1:PORT") and the others reach it at
// --rendezvous, as a job's workers reach the chief's.
//
// For each size, every contender is warmed up, then all are timed in
// alternating repetitions (so that drift on a busy machine hits them alike);
// the median repetition is reported, as bus bandwidth: bytes * 2(n-1)/n /
// time per all-reduce, what each of the n ranks sends and receives in a ring
// (as nccl-tests report it). Local replicas add work to the strategy's time
// but no bytes across ranks, so its bandwidth counts the same bytes. Every
// result is checked against the sum computed here first.
//
// --json writes one object per contender and size, {name, value, unit,
// baseline, baseline_value, ratio}, the format the benches share.
//
//   gloo_allreduce_bench --ranks=4 --sizes=4096,1048576,16777216
//       --local_replicas=2 --json=/tmp/gloo_allreduce.json

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "nlohmann/json.hpp"
#include "rpc/rendezvous_client.h"
#include "rpc/rendezvous_server.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/collective/gloo_store.h"
#include "runtime/collective/kv_store.h"
#include "runtime/collective/reduce_op.h"
#include "runtime/device/device.h"
#include "runtime/distribute/cross_device_ops.h"
#include "runtime/distribute/multi_worker_all_reduce.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/tensor/dtype.h"
#include "runtime/tensor/tensor.h"
#include "runtime/util/status_macros.h"

ABSL_FLAG(int, ranks, 4, "Number of ranks (threads).");
ABSL_FLAG(std::string, sizes, "4096,1048576,16777216",
          "Comma-separated all-reduce sizes in bytes (float32 elements).");
ABSL_FLAG(int, repetitions, 5, "Timed repetitions per size and contender.");
ABSL_FLAG(double, seconds_per_repetition, 0.2,
          "Roughly how long one repetition of the slowest contender takes; "
          "sets the iterations.");
ABSL_FLAG(int64_t, max_segment_bytes, 0,
          "GlooGroup::Options.max_segment_bytes of gloo_group and strategy "
          "(0: GlooGroup's default, 4 MiB).");
ABSL_FLAG(int, local_replicas, 1,
          "Replicas (CPU devices) per rank of the strategy contender, each "
          "on a thread of its own.");
ABSL_FLAG(int64_t, bucket_bytes,
          distrt::MultiWorkerAllReduce::kDefaultBucketBytes,
          "MultiWorkerAllReduce's bucket size of the strategy contender.");
ABSL_FLAG(int, rank, -1,
          "Run only this rank, in this process (-1: every rank, as threads).");
ABSL_FLAG(std::string, rendezvous, "",
          "With --rank > 0: rank 0's rendezvous address, host:port.");
ABSL_FLAG(std::string, json, "",
          "If set, also write the figures to this file as a JSON list of "
          "{name, value, unit, baseline, baseline_value, ratio}, one per "
          "contender and size (the baseline's own with ratio 1).");

namespace distrt {
namespace {

constexpr int kWarmup = 3;

enum Contender { kBaseline, kGlooGroup, kStrategy, kNumContenders };

// In the table's legend and the JSON names.
constexpr const char* kLabels[kNumContenders] = {"gloo allreduce_ring_chunked",
                                                 "gloo_group_all_reduce_sum",
                                                 "multi_worker_all_reduce"};

// From the flags, checked.
struct BenchOptions {
  int ranks = 4;
  int repetitions = 5;
  double seconds_per_repetition = 0.2;
  size_t max_segment_bytes = 0;
  int local_replicas = 1;
  int64_t bucket_bytes = MultiWorkerAllReduce::kDefaultBucketBytes;
};

struct Row {
  int64_t bytes = 0;
  int iterations = 0;
  // Median time per all-reduce.
  absl::Duration median[kNumContenders];
};

// One rank, as one worker process would be. Each contender has connections
// of its own, so that none shares sockets or Gloo slots with another.
struct Rank {
  // kGlooGroup's; its Barrier also starts every timed run.
  std::unique_ptr<GlooGroup> group;
  // kBaseline's Gloo context.
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  // kStrategy's: this worker's CPU devices (one per local replica), the
  // replicas' group, and the strategy's cross-device ops over the workers'
  // GlooGroup. The replica group borrows the devices, the ops the workers'
  // group: declared after them, so that they are destroyed first.
  LocalDevices devices;
  std::unique_ptr<ReplicaGroup> replicas;
  std::unique_ptr<GlooGroup> workers;
  std::unique_ptr<MultiWorkerAllReduce> ops;
};

// One size's buffers on one rank.
struct Buffers {
  std::vector<float> baseline;
  std::vector<float> group;
  std::vector<Tensor> replicas;  // one per local replica
  // Over `baseline`.
  std::unique_ptr<gloo::AllreduceRingChunked<float>> ring;
};

// Small integers, so that every sum is exact in float32 whatever order the
// contenders add in (up to 2^24 / 89 terms), and the check can ask for
// equality.
float ValueOf(int rank, int replica, size_t i) {
  return static_cast<float>(1 + (static_cast<size_t>(rank) * 3 +
                                 static_cast<size_t>(replica) * 5 + i) %
                                    89);
}

absl::Status Connect(KvStore* store, int rank, const BenchOptions& bench,
                     Rank* out) {
  GlooGroup::Options options;
  options.rank = rank;
  options.size = bench.ranks;
  if (bench.max_segment_bytes > 0) {
    options.max_segment_bytes = bench.max_segment_bytes;
  }
  options.prefix = "bench/gloo_group";
  ASSIGN_OR_RETURN(std::unique_ptr<GlooGroup> group,
                   GlooGroup::Create(store, options));
  out->group = std::move(group);

  LocalDevicesOptions device_options;
  device_options.num_cpu_devices = bench.local_replicas;
  device_options.use_gpus = false;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateLocalDevices(device_options));
  out->devices = std::move(devices);
  // Longer than the GlooGroup timeout, so that a failing cross-worker step
  // reports its own error before the local replicas waiting for it give up.
  out->replicas = std::make_unique<ReplicaGroup>(out->devices.pointers(),
                                                 2 * options.timeout);
  options.prefix = "bench/strategy";
  ASSIGN_OR_RETURN(std::unique_ptr<GlooGroup> workers,
                   GlooGroup::Create(store, options));
  out->workers = std::move(workers);
  // What MultiWorkerMirroredStrategy builds with the default
  // cross_device_ops ("auto").
  out->ops = std::make_unique<MultiWorkerAllReduce>(
      ChooseCrossDeviceOps(out->devices.pointers()), out->workers.get(),
      bench.local_replicas, bench.bucket_bytes);

  try {
    GlooStore gloo_store(store, {"bench/baseline", options.timeout});
    gloo::transport::tcp::attr attr;
    attr.hostname = options.host;
    out->device = gloo::transport::tcp::CreateDevice(attr);
    out->context =
        std::make_shared<gloo::rendezvous::Context>(rank, bench.ranks);
    out->context->setTimeout(std::chrono::seconds(60));
    out->context->connectFullMesh(gloo_store, out->device);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("baseline rank ", rank, ": ", e.what()));
  }
  return absl::OkStatus();
}

// `iterations` all-reduces of `contender` by local replica `replica` of
// this rank (always 0 but for kStrategy). They keep summing into the same
// buffers: the values grow to infinity, which costs an add no more than a
// finite value does.
absl::Status AllReduces(Rank& r, Contender contender, Buffers& b, int replica,
                        int64_t iterations) {
  for (int64_t i = 0; i < iterations; ++i) {
    absl::Status s;
    switch (contender) {
      case kBaseline:
        try {
          b.ring->run();
        } catch (const std::exception& e) {
          s = absl::InternalError(absl::StrCat("baseline: ", e.what()));
        }
        break;
      case kGlooGroup:
        s = r.group->AllReduceSum(absl::MakeSpan(b.group));
        break;
      case kStrategy:
        s = r.ops->AllReduce(*r.replicas, replica, ReduceOp::kSum,
                             b.replicas[replica]);
        break;
      case kNumContenders:
        break;
    }
    if (!s.ok()) {
      // The other local replicas would otherwise wait for this one until
      // the replica barrier's timeout.
      if (contender == kStrategy) r.replicas->barrier().Leave(replica, s);
      return s;
    }
  }
  return absl::OkStatus();
}

// Runs `iterations` all-reduces of `contender` on this rank after a barrier
// of every rank, and returns the time from that barrier until this rank's
// last all-reduce returns, which it cannot do before every rank has
// contributed to it.
absl::StatusOr<absl::Duration> Run(Rank& r, Contender contender, Buffers& b,
                                   int64_t iterations) {
  // kStrategy's replicas 1.. run on threads of their own, as Strategy::Run
  // runs a step's replicas, and replica 0 on this one. Started before the
  // clock, they wait in the local step of their first all-reduce until
  // replica 0 joins them; replica 0's last all-reduce returns only after
  // they have taken the result, so the clock stops after all of them.
  const int replicas =
      contender == kStrategy ? static_cast<int>(b.replicas.size()) : 1;
  std::vector<absl::Status> statuses(replicas);
  std::vector<std::thread> others;
  for (int k = 1; k < replicas; ++k) {
    others.emplace_back(
        [&, k] { statuses[k] = AllReduces(r, contender, b, k, iterations); });
  }
  absl::Status s = r.group->Barrier();
  const absl::Time start = absl::Now();
  if (s.ok()) {
    s = AllReduces(r, contender, b, 0, iterations);
  } else if (contender == kStrategy) {
    r.replicas->barrier().Leave(0, s);
  }
  const absl::Duration elapsed = absl::Now() - start;
  for (std::thread& t : others) t.join();
  for (const absl::Status& other : statuses) {
    if (s.ok()) s = other;
  }
  RETURN_IF_ERROR(s);
  return elapsed;
}

// Compares every buffer with the sum computed here: of every rank's values
// for kBaseline and kGlooGroup, of every rank's every replica's for
// kStrategy.
absl::Status Check(int rank, const BenchOptions& bench, const Buffers& b) {
  std::vector<absl::Span<const float>> replicas;
  for (const Tensor& t : b.replicas) replicas.push_back(t.flat<float>());
  for (size_t i = 0; i < b.group.size(); ++i) {
    float ranks_sum = 0;
    float replicas_sum = 0;
    for (int k = 0; k < bench.ranks; ++k) {
      ranks_sum += ValueOf(k, 0, i);
      for (int j = 0; j < bench.local_replicas; ++j) {
        replicas_sum += ValueOf(k, j, i);
      }
    }
    if (b.baseline[i] != ranks_sum || b.group[i] != ranks_sum) {
      return absl::InternalError(absl::StrCat(
          "rank ", rank, " element ", i, ": baseline ", b.baseline[i],
          ", gloo_group ", b.group[i], ", want ", ranks_sum));
    }
    for (size_t j = 0; j < replicas.size(); ++j) {
      if (replicas[j][i] != replicas_sum) {
        return absl::InternalError(absl::StrCat(
            "rank ", rank, " replica ", j, " element ", i, ": strategy ",
            replicas[j][i], ", want ", replicas_sum));
      }
    }
  }
  return absl::OkStatus();
}

// Runs on every rank's thread; rank 0 fills `row`.
absl::Status RunSize(Rank& r, int rank, const BenchOptions& bench,
                     int64_t bytes, Row* row) {
  const size_t count = static_cast<size_t>(bytes) / sizeof(float);
  Buffers b;
  b.baseline.resize(count);
  b.group.resize(count);
  for (size_t i = 0; i < count; ++i) {
    b.baseline[i] = b.group[i] = ValueOf(rank, 0, i);
  }
  for (int j = 0; j < bench.local_replicas; ++j) {
    ASSIGN_OR_RETURN(
        Tensor t, Tensor::Create(DType::kFloat32, {static_cast<int64_t>(count)},
                                 r.devices.devices[j]->allocator()));
    absl::Span<float> values = t.flat<float>();
    for (size_t i = 0; i < count; ++i) values[i] = ValueOf(rank, j, i);
    b.replicas.push_back(std::move(t));
  }
  try {
    b.ring = std::make_unique<gloo::AllreduceRingChunked<float>>(
        r.context, std::vector<float*>{b.baseline.data()},
        static_cast<int>(count));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("baseline: ", e.what()));
  }

  // Check once, against a sum computed here.
  for (int c = 0; c < kNumContenders; ++c) {
    if (absl::StatusOr<absl::Duration> t = Run(r, Contender(c), b, 1);
        !t.ok()) {
      return t.status();
    }
  }
  RETURN_IF_ERROR(Check(rank, bench, b));

  // Iterations from the slowest contender's warm-up, agreed on by
  // broadcast: every rank must make the same number of calls.
  absl::Duration slowest = absl::ZeroDuration();
  for (int c = 0; c < kNumContenders; ++c) {
    ASSIGN_OR_RETURN(absl::Duration t, Run(r, Contender(c), b, kWarmup));
    slowest = std::max(slowest, t / kWarmup);
  }
  int64_t iterations =
      std::clamp<int64_t>(static_cast<int64_t>(bench.seconds_per_repetition /
                                               absl::ToDoubleSeconds(slowest)),
                          3, 100000);
  RETURN_IF_ERROR(
      r.group->Broadcast(absl::MakeSpan(&iterations, 1), /*root=*/0));

  std::vector<absl::Duration> times[kNumContenders];
  for (int rep = 0; rep < bench.repetitions; ++rep) {
    for (int c = 0; c < kNumContenders; ++c) {
      ASSIGN_OR_RETURN(absl::Duration t, Run(r, Contender(c), b, iterations));
      times[c].push_back(t / iterations);
    }
  }
  if (rank == 0) {
    row->bytes = bytes;
    row->iterations = static_cast<int>(iterations);
    for (int c = 0; c < kNumContenders; ++c) {
      std::sort(times[c].begin(), times[c].end());
      row->median[c] = times[c][times[c].size() / 2];
    }
  }
  return absl::OkStatus();
}

double BusGBps(int64_t bytes, int n, absl::Duration t) {
  return static_cast<double>(bytes) * 2.0 * (n - 1) / n /
         absl::ToDoubleSeconds(t) / 1e9;
}

// The JSON name of `contender` at `bytes`: its label, the size and whatever
// of its configuration differs from the defaults, so that figures of
// different configurations never share a name.
std::string JsonName(Contender contender, int64_t bytes,
                     const BenchOptions& bench) {
  std::string name =
      absl::StrCat(kLabels[contender], " ", bytes, " B ranks=", bench.ranks);
  if (contender == kStrategy) {
    if (bench.local_replicas != 1) {
      absl::StrAppend(&name, " local_replicas=", bench.local_replicas);
    }
    if (bench.bucket_bytes != MultiWorkerAllReduce::kDefaultBucketBytes) {
      absl::StrAppend(&name, " bucket_bytes=", bench.bucket_bytes);
    }
  }
  if (contender != kBaseline && bench.max_segment_bytes != 0) {
    absl::StrAppend(&name, " max_segment_bytes=", bench.max_segment_bytes);
  }
  return name;
}

int Main() {
  BenchOptions bench;
  bench.ranks = absl::GetFlag(FLAGS_ranks);
  bench.repetitions = absl::GetFlag(FLAGS_repetitions);
  bench.seconds_per_repetition = absl::GetFlag(FLAGS_seconds_per_repetition);
  bench.local_replicas = absl::GetFlag(FLAGS_local_replicas);
  bench.bucket_bytes = absl::GetFlag(FLAGS_bucket_bytes);
  const int64_t max_segment_bytes = absl::GetFlag(FLAGS_max_segment_bytes);
  std::vector<int64_t> sizes;
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',', absl::SkipEmpty())) {
    int64_t bytes = 0;
    if (!absl::SimpleAtoi(s, &bytes) || bytes < 4 || bytes % 4 != 0 ||
        bytes > (int64_t{1} << 31) - 4) {
      std::fprintf(stderr,
                   "--sizes: \"%.*s\" is not a byte count that is a multiple "
                   "of 4, in [4, 2 GiB)\n",
                   static_cast<int>(s.size()), s.data());
      return 2;
    }
    sizes.push_back(bytes);
  }
  if (bench.ranks < 2 || bench.repetitions < 1 || sizes.empty()) {
    std::fprintf(stderr, "need --ranks >= 2, --repetitions >= 1, --sizes\n");
    return 2;
  }
  if (bench.local_replicas < 1) {
    std::fprintf(stderr, "--local_replicas: %d is not at least 1\n",
                 bench.local_replicas);
    return 2;
  }
  if (bench.bucket_bytes < static_cast<int64_t>(sizeof(float))) {
    std::fprintf(stderr,
                 "--bucket_bytes: %lld is less than one float (4 bytes)\n",
                 static_cast<long long>(bench.bucket_bytes));
    return 2;
  }
  if (max_segment_bytes < 0) {
    std::fprintf(stderr, "--max_segment_bytes: %lld is negative\n",
                 static_cast<long long>(max_segment_bytes));
    return 2;
  }
  bench.max_segment_bytes = static_cast<size_t>(max_segment_bytes);
  // Opened before the run, so that a bad path fails in a second, not after
  // the whole bench.
  const std::string json_path = absl::GetFlag(FLAGS_json);
  std::ofstream json_file;
  if (!json_path.empty()) {
    json_file.open(json_path);
    if (!json_file) {
      std::fprintf(stderr, "--json: cannot open \"%s\" for writing: %s\n",
                   json_path.c_str(), std::strerror(errno));
      return 2;
    }
  }

  const int only_rank = absl::GetFlag(FLAGS_rank);
  const std::string rendezvous = absl::GetFlag(FLAGS_rendezvous);
  if (only_rank < -1 || only_rank >= bench.ranks ||
      (only_rank > 0 && rendezvous.empty())) {
    std::fprintf(stderr,
                 "--rank: %d needs to be -1 (every rank, as threads) or in "
                 "[0, --ranks = %d), and a rank other than 0 needs "
                 "--rendezvous\n",
                 only_rank, bench.ranks);
    return 2;
  }

  // The ranks' store: in this process, rank 0's server, or rank 0's over
  // RPCs.
  InMemoryKvStore in_process;
  std::unique_ptr<rpc::RendezvousServer> server;
  std::unique_ptr<rpc::RendezvousClient> client;
  KvStore* store = &in_process;
  if (only_rank == 0) {
    rpc::RendezvousServer::Options options;
    options.listen_address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<rpc::RendezvousServer>> started =
        rpc::RendezvousServer::Start(options);
    if (!started.ok()) {
      std::fprintf(stderr, "rank 0: rendezvous server: %s\n",
                   started.status().ToString().c_str());
      return 1;
    }
    server = *std::move(started);
    store = server->store();
    std::printf("rendezvous 127.0.0.1:%d\n", server->port());
    std::fflush(stdout);
  } else if (only_rank > 0) {
    rpc::RendezvousClient::Options options;
    options.address = rendezvous;
    client = std::make_unique<rpc::RendezvousClient>(options);
    store = client.get();
  }

  std::vector<Row> rows(sizes.size());
  std::vector<absl::Status> statuses(bench.ranks);
  std::string strategy_name;  // rank 0's
  std::vector<std::thread> threads;
  for (int rank = 0; rank < bench.ranks; ++rank) {
    if (only_rank >= 0 && rank != only_rank) continue;
    threads.emplace_back([&, rank] {
      Rank r;
      absl::Status s = Connect(store, rank, bench, &r);
      if (s.ok() && rank == 0) strategy_name = r.ops->name();
      for (size_t k = 0; s.ok() && k < sizes.size(); ++k) {
        s = RunSize(r, rank, bench, sizes[k], &rows[k]);
      }
      statuses[rank] = s;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < bench.ranks; ++rank) {
    if (!statuses[rank].ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank,
                   statuses[rank].ToString().c_str());
      return 1;
    }
  }
  // Only rank 0 has the figures.
  if (only_rank > 0) return 0;

  const int n = bench.ranks;
  std::printf(
      "all-reduce sum, float32, %d ranks (%s) over loopback TCP, %u "
      "hardware threads; median of %d repetitions\n",
      n, only_rank < 0 ? "threads" : "processes",
      std::thread::hardware_concurrency(), bench.repetitions);
  std::printf("baseline:   gloo::AllreduceRingChunked<float>, built once\n");
  std::printf("gloo_group: GlooGroup::AllReduceSum (gloo::allreduce)\n");
  std::printf(
      "strategy:   MultiWorkerAllReduce::AllReduce (%s), %d local "
      "replica(s) per rank, %lld-byte buckets\n",
      strategy_name.c_str(), bench.local_replicas,
      static_cast<long long>(bench.bucket_bytes));
  std::printf("%10s %6s %15s %15s %15s %13s %13s\n", "bytes", "iters",
              "baseline GB/s", "gloo_group GB/s", "strategy GB/s", "group/base",
              "strategy/base");
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (const Row& row : rows) {
    double gbps[kNumContenders];
    for (int c = 0; c < kNumContenders; ++c) {
      gbps[c] = BusGBps(row.bytes, n, row.median[c]);
      nlohmann::ordered_json entry;
      entry["name"] = JsonName(Contender(c), row.bytes, bench);
      entry["value"] = gbps[c];
      entry["unit"] = "GB/s";
      entry["baseline"] = kLabels[kBaseline];
      entry["baseline_value"] = gbps[kBaseline];
      entry["ratio"] = gbps[c] / gbps[kBaseline];
      json.push_back(std::move(entry));
    }
    std::printf("%10lld %6d %15.3f %15.3f %15.3f %13.2f %13.2f\n",
                static_cast<long long>(row.bytes), row.iterations,
                gbps[kBaseline], gbps[kGlooGroup], gbps[kStrategy],
                gbps[kGlooGroup] / gbps[kBaseline],
                gbps[kStrategy] / gbps[kBaseline]);
  }
  std::printf(
      "bus bandwidth = bytes * 2(n-1)/n / time, on the bytes across ranks; "
      "ratio = contender / baseline (above 1: faster than Gloo's own)\n");
  if (json_file.is_open()) {
    json_file << json.dump(2) << "\n";
    json_file.close();
    if (!json_file) {
      std::fprintf(stderr, "--json: writing \"%s\" failed\n",
                   json_path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return distrt::Main();
}
