// Cross-worker all-reduce bandwidth: GlooGroup::AllReduceSum (which calls
// gloo::allreduce) against Gloo's AllreduceRingChunked driven directly, the
// baseline, on the same ranks and buffers in the same run. Ranks are threads
// of this process, connected over loopback TCP, each pair of ranks through
// its own sockets as between processes.
//
// For each size, both are warmed up, then timed in alternating repetitions
// (so that drift on a busy machine hits both alike); the median repetition
// is reported, as bus bandwidth: bytes * 2(n-1)/n / time per all-reduce,
// what each rank sends and receives in a ring (as nccl-tests report it).
// Every result is checked against the sum computed here first.
//
//   gloo_allreduce_bench --ranks=4 --sizes=4096,1048576,16777216

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/collective/gloo_store.h"
#include "runtime/collective/kv_store.h"

ABSL_FLAG(int, ranks, 4, "Number of ranks (threads).");
ABSL_FLAG(std::string, sizes, "4096,1048576,16777216",
          "Comma-separated all-reduce sizes in bytes (float32 elements).");
ABSL_FLAG(int, repetitions, 5, "Timed repetitions per size and contender.");
ABSL_FLAG(double, seconds_per_repetition, 0.2,
          "Roughly how long one repetition takes; sets the iterations.");
ABSL_FLAG(int64_t, max_segment_bytes, 0,
          "GlooGroup::Options.max_segment_bytes of the figure (0: Gloo's "
          "default, 1 MiB).");

namespace distrt {
namespace {

constexpr int kWarmup = 3;

struct Row {
  int64_t bytes = 0;
  int iterations = 0;
  absl::Duration ours;      // median time per all-reduce
  absl::Duration baseline;  // median time per all-reduce
};

// One rank: its group, and a separate Gloo context for the baseline, so that
// neither shares connections or slots with the other.
struct Rank {
  std::unique_ptr<GlooGroup> group;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
};

float ValueOf(int rank, size_t i) {
  return static_cast<float>((rank + 1) * 100 + static_cast<int>(i % 89));
}

absl::Status Connect(KvStore* store, int rank, int n, Rank* out) {
  GlooGroup::Options options;
  options.rank = rank;
  options.size = n;
  options.prefix = "bench/ours";
  options.max_segment_bytes =
      static_cast<size_t>(absl::GetFlag(FLAGS_max_segment_bytes));
  absl::StatusOr<std::unique_ptr<GlooGroup>> group =
      GlooGroup::Create(store, options);
  if (!group.ok()) return group.status();
  out->group = *std::move(group);
  try {
    GlooStore gloo_store(store, {"bench/baseline", options.timeout});
    gloo::transport::tcp::attr attr;
    attr.hostname = options.host;
    out->device = gloo::transport::tcp::CreateDevice(attr);
    out->context = std::make_shared<gloo::rendezvous::Context>(rank, n);
    out->context->setTimeout(std::chrono::seconds(60));
    out->context->connectFullMesh(gloo_store, out->device);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("baseline rank ", rank, ": ", e.what()));
  }
  return absl::OkStatus();
}

// Runs on every rank's thread; rank 0 fills `row`. Each repetition starts
// after a GlooGroup barrier and ends when this rank's last all-reduce
// returns, which no rank can do before every rank has contributed.
absl::Status RunSize(Rank& r, int rank, int n, int64_t bytes, int repetitions,
                     double seconds, Row* row) {
  const size_t count = static_cast<size_t>(bytes) / sizeof(float);
  std::vector<float> ours(count), theirs(count);
  auto fill = [&] {
    for (size_t i = 0; i < count; ++i) ours[i] = theirs[i] = ValueOf(rank, i);
  };
  fill();
  gloo::AllreduceRingChunked<float> baseline(
      r.context, std::vector<float*>{theirs.data()}, static_cast<int>(count));

  // Check once, against a sum computed here.
  if (absl::Status s = r.group->AllReduceSum(absl::MakeSpan(ours)); !s.ok()) {
    return s;
  }
  try {
    baseline.run();
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int k = 0; k < n; ++k) want += ValueOf(k, i);
    if (ours[i] != want || theirs[i] != want) {
      return absl::InternalError(absl::StrCat("rank ", rank, " element ", i,
                                              ": ", ours[i], " and ", theirs[i],
                                              ", want ", want));
    }
  }

  // Iterations from one timed all-reduce of ours, agreed on by broadcast.
  int64_t iterations = 1;
  {
    const absl::Time start = absl::Now();
    for (int i = 0; i < kWarmup; ++i) {
      if (absl::Status s = r.group->AllReduceSum(absl::MakeSpan(ours));
          !s.ok()) {
        return s;
      }
    }
    const double each = absl::ToDoubleSeconds(absl::Now() - start) / kWarmup;
    iterations =
        std::clamp<int64_t>(static_cast<int64_t>(seconds / each), 3, 100000);
    if (absl::Status s =
            r.group->Broadcast(absl::MakeSpan(&iterations, 1), /*root=*/0);
        !s.ok()) {
      return s;
    }
  }
  try {
    for (int i = 0; i < kWarmup; ++i) baseline.run();
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }

  std::vector<absl::Duration> ours_times, baseline_times;
  for (int rep = 0; rep < repetitions; ++rep) {
    for (int contender = 0; contender < 2; ++contender) {
      if (absl::Status s = r.group->Barrier(); !s.ok()) return s;
      const absl::Time start = absl::Now();
      for (int64_t i = 0; i < iterations; ++i) {
        if (contender == 0) {
          if (absl::Status s = r.group->AllReduceSum(absl::MakeSpan(ours));
              !s.ok()) {
            return s;
          }
        } else {
          try {
            baseline.run();
          } catch (const std::exception& e) {
            return absl::InternalError(e.what());
          }
        }
      }
      (contender == 0 ? ours_times : baseline_times)
          .push_back((absl::Now() - start) / iterations);
    }
  }
  if (rank == 0) {
    std::sort(ours_times.begin(), ours_times.end());
    std::sort(baseline_times.begin(), baseline_times.end());
    row->bytes = bytes;
    row->iterations = static_cast<int>(iterations);
    row->ours = ours_times[ours_times.size() / 2];
    row->baseline = baseline_times[baseline_times.size() / 2];
  }
  return absl::OkStatus();
}

std::string HumanBytes(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) {
    return absl::StrCat(bytes >> 20, " MiB");
  }
  if (bytes >= 1024 && bytes % 1024 == 0)
    return absl::StrCat(bytes >> 10, " KiB");
  return absl::StrCat(bytes, " B");
}

double BusGBps(int64_t bytes, int n, absl::Duration t) {
  return static_cast<double>(bytes) * 2.0 * (n - 1) / n /
         absl::ToDoubleSeconds(t) / 1e9;
}

int Main() {
  const int n = absl::GetFlag(FLAGS_ranks);
  const int repetitions = absl::GetFlag(FLAGS_repetitions);
  const double seconds = absl::GetFlag(FLAGS_seconds_per_repetition);
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
  if (n < 2 || repetitions < 1 || sizes.empty()) {
    std::fprintf(stderr, "need --ranks >= 2, --repetitions >= 1, --sizes\n");
    return 2;
  }

  InMemoryKvStore store;
  std::vector<Row> rows(sizes.size());
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      Rank r;
      absl::Status s = Connect(&store, rank, n, &r);
      for (size_t k = 0; s.ok() && k < sizes.size(); ++k) {
        s = RunSize(r, rank, n, sizes[k], repetitions, seconds, &rows[k]);
      }
      statuses[rank] = s;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < n; ++rank) {
    if (!statuses[rank].ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank,
                   statuses[rank].ToString().c_str());
      return 1;
    }
  }

  std::printf(
      "all-reduce sum, float32, %d ranks (threads) over loopback TCP, %u "
      "hardware threads; median of %d repetitions\n",
      n, std::thread::hardware_concurrency(), repetitions);
  std::printf("figure: GlooGroup::AllReduceSum (gloo::allreduce)\n");
  std::printf("baseline: gloo::AllreduceRingChunked<float>, built once\n");
  std::printf("%10s %6s %12s %12s %12s %12s %7s\n", "size", "iters",
              "figure us", "base us", "figure GB/s", "base GB/s", "ratio");
  for (const Row& row : rows) {
    const double ours = BusGBps(row.bytes, n, row.ours);
    const double base = BusGBps(row.bytes, n, row.baseline);
    std::printf("%10s %6d %12.1f %12.1f %12.3f %12.3f %7.2f\n",
                HumanBytes(row.bytes).c_str(), row.iterations,
                absl::ToDoubleMicroseconds(row.ours),
                absl::ToDoubleMicroseconds(row.baseline), ours, base,
                ours / base);
  }
  std::printf(
      "bus bandwidth = bytes * 2(n-1)/n / time; ratio = figure / "
      "baseline (above 1: GlooGroup is faster)\n");
  return 0;
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return distrt::Main();
}
