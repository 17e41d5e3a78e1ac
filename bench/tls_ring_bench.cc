// What encryption costs the workers' all-reduce: rpc::TlsRingCollective (a
// ring over the job's mutual TLS, what a job with TLS runs) against
// GlooGroup (Gloo's plain TCP, what a job without TLS runs), on the same
// ranks and sizes in the same run.
//
// Ranks are threads of this process over loopback, each contender with
// connections of its own. For each size both are warmed up, then timed in
// alternating repetitions (so that drift on a busy machine hits them
// alike); the median repetition is reported as bus bandwidth, bytes *
// 2(n-1)/n / time per all-reduce (what each rank sends and receives in a
// ring, as nccl-tests report it), and the TLS ring's as a ratio of Gloo's.
// Every result is checked against the sum computed here.
//
//   tls_ring_bench --ranks=2 --sizes=4096,1048576,16777216,67108864

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
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/barrier.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/data_plane_tls.h"
#include "rpc/tls_certificates.h"
#include "rpc/tls_ring_collective.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/collective/kv_store.h"
#include "runtime/util/status_macros.h"

ABSL_FLAG(int, ranks, 2, "Number of ranks (threads).");
ABSL_FLAG(std::string, sizes, "4096,1048576,16777216,67108864",
          "Comma-separated all-reduce sizes in bytes (float32 elements).");
ABSL_FLAG(int, repetitions, 5, "Timed repetitions per size and contender.");
ABSL_FLAG(double, seconds_per_repetition, 0.3,
          "Roughly how long one repetition of the slower contender takes; "
          "sets the iterations.");

namespace distrt {
namespace {

enum Contender { kGloo, kTlsRing, kNumContenders };
constexpr const char* kLabels[kNumContenders] = {"gloo (TCP)",
                                                 "tls ring (mutual TLS)"};

struct Rank {
  std::unique_ptr<GlooGroup> gloo;
  std::unique_ptr<rpc::TlsRingCollective> ring;
  CrossWorkerCollective& of(Contender c) {
    return c == kGloo ? static_cast<CrossWorkerCollective&>(*gloo) : *ring;
  }
};

float ValueOf(int rank, size_t i) {
  return static_cast<float>(1 + (static_cast<size_t>(rank) * 3 + i) % 89);
}

// `iterations` all-reduces after a barrier; the time from the barrier.
absl::StatusOr<absl::Duration> Time(CrossWorkerCollective& group,
                                    std::vector<float>& values,
                                    int64_t iterations) {
  RETURN_IF_ERROR(group.Barrier());
  const absl::Time start = absl::Now();
  for (int64_t i = 0; i < iterations; ++i) {
    RETURN_IF_ERROR(group.AllReduceSum(absl::MakeSpan(values)));
  }
  return absl::Now() - start;
}

absl::Status Check(int ranks, const std::vector<float>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    float want = 0;
    for (int r = 0; r < ranks; ++r) want += ValueOf(r, i);
    if (values[i] != want) {
      return absl::InternalError(
          absl::StrCat("element ", i, ": ", values[i], ", want ", want));
    }
  }
  return absl::OkStatus();
}

// One rank's part of one size: rank 0 sets `iterations` before
// `iterations_known` lets the others go on, and fills `medians`.
absl::Status RunSize(Rank& r, int rank, int ranks, int64_t bytes,
                     int repetitions, double seconds_per_repetition,
                     absl::Barrier* iterations_known, int64_t* iterations,
                     absl::Duration* medians) {
  const size_t count = static_cast<size_t>(bytes) / sizeof(float);
  std::vector<float> values(count);
  for (int c = 0; c < kNumContenders; ++c) {
    // One all-reduce each to check the sum, then warm-up.
    for (size_t i = 0; i < count; ++i) values[i] = ValueOf(rank, i);
    Contender contender = static_cast<Contender>(c);
    RETURN_IF_ERROR(r.of(contender).AllReduceSum(absl::MakeSpan(values)));
    RETURN_IF_ERROR(Check(ranks, values));
    ASSIGN_OR_RETURN(absl::Duration warm, Time(r.of(contender), values, 3));
    // Rank 0 picks the iterations from the slower contender's warm-up; the
    // others read them after the barrier below.
    if (rank == 0) {
      const int64_t fit =
          static_cast<int64_t>(seconds_per_repetition /
                               std::max(1e-6, absl::ToDoubleSeconds(warm) / 3));
      *iterations = c == 0 ? std::max<int64_t>(1, fit)
                           : std::clamp<int64_t>(fit, 1, *iterations);
    }
  }
  // The last rank through deletes it (absl::Barrier's contract).
  if (iterations_known->Block()) delete iterations_known;
  std::vector<absl::Duration> times[kNumContenders];
  for (int rep = 0; rep < repetitions; ++rep) {
    for (int c = 0; c < kNumContenders; ++c) {
      ASSIGN_OR_RETURN(absl::Duration t, Time(r.of(static_cast<Contender>(c)),
                                              values, *iterations));
      times[c].push_back(t / *iterations);
    }
  }
  if (rank == 0) {
    for (int c = 0; c < kNumContenders; ++c) {
      std::sort(times[c].begin(), times[c].end());
      medians[c] = times[c][times[c].size() / 2];
    }
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int ranks = absl::GetFlag(FLAGS_ranks);
  const int repetitions = absl::GetFlag(FLAGS_repetitions);
  std::vector<int64_t> sizes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    int64_t bytes = 0;
    if (!absl::SimpleAtoi(s, &bytes) || bytes < 4) {
      std::fprintf(stderr, "tls_ring_bench: --sizes: \"%s\" is not a size\n",
                   std::string(s).c_str());
      return 2;
    }
    sizes.push_back(bytes);
  }
  if (ranks < 2 || repetitions < 1) {
    std::fprintf(stderr, "tls_ring_bench: --ranks >= 2, --repetitions >= 1\n");
    return 2;
  }
  absl::StatusOr<rpc::PemKeyPair> ca =
      rpc::GenerateCertificateAuthority("tls_ring_bench CA", absl::Hours(1));
  absl::StatusOr<rpc::PemKeyPair> task =
      ca.ok()
          ? rpc::IssueCertificate(*ca, "rank", {"127.0.0.1"}, absl::Hours(1))
          : ca.status();
  absl::StatusOr<std::shared_ptr<const rpc::DataPlaneTls>> tls =
      task.ok() ? rpc::DataPlaneTls::FromPem(
                      task->certificate_pem, task->private_key_pem,
                      ca->certificate_pem, "tls-ring-bench-token-0123456789")
                : task.status();
  if (!tls.ok()) {
    std::fprintf(stderr, "tls_ring_bench: %s\n",
                 tls.status().ToString().c_str());
    return 1;
  }

  std::printf(
      "all-reduce of float32 between %d ranks (threads over loopback), "
      "bus bandwidth of the median of %d repetitions\n"
      "%12s %14s %14s %10s\n",
      ranks, repetitions, "bytes", kLabels[kGloo], kLabels[kTlsRing],
      "tls/gloo");
  InMemoryKvStore store;
  std::vector<Rank> group(ranks);
  std::vector<absl::Status> statuses(ranks);
  absl::Duration medians[kNumContenders];
  std::vector<int64_t> iterations(sizes.size(), 1);
  std::vector<absl::Barrier*> barriers;
  for (size_t i = 0; i < sizes.size(); ++i) {
    barriers.push_back(new absl::Barrier(ranks));
  }
  std::vector<std::string> lines(sizes.size());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      Rank& r = group[rank];
      GlooGroup::Options gloo;
      gloo.rank = rank;
      gloo.size = ranks;
      gloo.prefix = "bench/gloo";
      absl::StatusOr<std::unique_ptr<GlooGroup>> g =
          GlooGroup::Create(&store, gloo);
      if (!g.ok()) {
        statuses[rank] = g.status();
        return;
      }
      r.gloo = *std::move(g);
      rpc::TlsRingCollective::Options ring;
      ring.rank = rank;
      ring.size = ranks;
      ring.prefix = "bench/ring";
      ring.tls = *tls;
      absl::StatusOr<std::unique_ptr<rpc::TlsRingCollective>> t =
          rpc::TlsRingCollective::Create(&store, ring);
      if (!t.ok()) {
        statuses[rank] = t.status();
        return;
      }
      r.ring = *std::move(t);
      for (size_t i = 0; i < sizes.size(); ++i) {
        absl::Status s = RunSize(r, rank, ranks, sizes[i], repetitions,
                                 absl::GetFlag(FLAGS_seconds_per_repetition),
                                 barriers[i], &iterations[i], medians);
        if (!s.ok()) {
          statuses[rank] = s;
          r.gloo->Close();
          r.ring->Close();
          return;
        }
        if (rank == 0) {
          const double bus_bytes =
              static_cast<double>(sizes[i]) * 2 * (ranks - 1) / ranks;
          const double gloo_bw =
              bus_bytes / absl::ToDoubleSeconds(medians[kGloo]) / 1e9;
          const double ring_bw =
              bus_bytes / absl::ToDoubleSeconds(medians[kTlsRing]) / 1e9;
          std::printf("%12lld %9.3f GB/s %9.3f GB/s %10.2f\n",
                      static_cast<long long>(sizes[i]), gloo_bw, ring_bw,
                      ring_bw / gloo_bw);
          std::fflush(stdout);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < ranks; ++rank) {
    if (!statuses[rank].ok()) {
      std::fprintf(stderr, "tls_ring_bench: rank %d: %s\n", rank,
                   statuses[rank].ToString().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) { return distrt::Main(argc, argv); }
