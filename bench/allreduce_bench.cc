// Family "allreduce": the all-reduce a MirroredStrategy training step makes
// on CPU devices, against the machine's memory bandwidth measured in the
// same run.
//
//   value     bus bandwidth of the CrossDeviceOps MirroredStrategy picks for
//             CPU devices (ChooseCrossDeviceOps: "cpu_all_reduce"), with n
//             replicas, each a thread of its own with a float32 tensor of its
//             own on a logical CPU device of its own, as Strategy::Run runs
//             them: bytes * 2(n-1)/n / time per all-reduce (nccl-tests'
//             busbw);
//   baseline  "traffic_ceiling": the bus bandwidth an all-reduce of n
//             replicas would reach if it moved only the bytes it must, at
//             the memory bandwidth of c[i] = a[i] + b[i] measured here (float
//             arrays of the same byte size, split over hardware_concurrency()
//             threads).
//
// The ceiling, per n: c = a + b of B bytes moves 3B (reads a and b, writes
// c) in time t, so memory moves W = 3B / t. An all-reduce of n tensors of B
// bytes must read every input and write every output, 2nB, so it takes at
// least 2nB / W = 2nt / 3, and its bus bandwidth B * 2(n-1)/n / time is at
// most 3(n-1)/n^2 * B / t: 0.75, 0.56 and 0.33 of the c = a + b figure for
// 2, 4 and 8 replicas. The ratio to that ceiling says how much of the
// machine's memory traffic the all-reduce achieves, whatever the machine
// and n; caches can lift it above 1 where a tensor fits in them. Both run on
// threads started once per case and reused, so no thread start is timed, and
// their repetitions alternate, so that drift on a busy machine hits both alike;
// each figure is the median repetition.

#include "bench/allreduce_bench.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collective/reduce_op.h"
#include "runtime/device/device.h"
#include "runtime/distribute/cross_device_ops.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/distribute/replica_threads.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/tensor/dtype.h"
#include "runtime/tensor/tensor.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Each case is timed for about this long in all (all-reduce and baseline
// together), in at least kMinRepetitions repetitions of each; a repetition
// is as many back-to-back calls as fill about kRepetitionTarget, so that
// waking the threads costs nothing measurable even at 1 MiB.
constexpr absl::Duration kCaseTarget = absl::Seconds(1);
constexpr absl::Duration kRepetitionTarget = absl::Milliseconds(100);
constexpr int kMinRepetitions = 3;
// Bounds on the loops above, whatever the clock says.
constexpr int kMaxRepetitions = 100;
constexpr int64_t kMaxIterations = 10000;

// How long a replica waits at the all-reduce's barrier for the others
// before the round fails: far more than the slowest case (8 replicas of
// 256 MiB on a busy 2-core machine take seconds), so only a real hang trips
// it.
constexpr absl::Duration kBarrierTimeout = absl::Minutes(5);

// Element i of replica r: small integers, so that the sum over up to 8
// replicas is exact in float32 and the check can ask for equality. They
// depend on i only through i % 89, which makes the expected sums a table.
constexpr int kPeriod = 89;
float ValueOf(int replica, int64_t i) {
  return static_cast<float>(1 + (replica * 5 + i) % kPeriod);
}

// One case: n replicas' devices, group, ops and tensors, and the baseline's
// arrays, all of `bytes` each. Destroyed before the next case, so that at
// most one case's memory is held.
struct Case {
  int replicas = 0;
  int64_t bytes = 0;
  LocalDevices devices;
  // Borrows the devices: declared after them, destroyed first.
  std::unique_ptr<ReplicaGroup> group;
  std::unique_ptr<CrossDeviceOps> ops;
  std::vector<Tensor> tensors;  // one per replica, on its device
  std::vector<float> a, b, c;   // the baseline's
};

absl::StatusOr<std::unique_ptr<Case>> MakeCase(int replicas, int64_t bytes) {
  auto result = std::make_unique<Case>();
  Case& k = *result;
  k.replicas = replicas;
  k.bytes = bytes;
  LocalDevicesOptions device_options;
  device_options.num_cpu_devices = replicas;
  device_options.use_gpus = false;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateLocalDevices(device_options));
  k.devices = std::move(devices);
  k.group =
      std::make_unique<ReplicaGroup>(k.devices.pointers(), kBarrierTimeout);
  // What MirroredStrategy builds with the default cross_device_ops ("auto").
  k.ops = ChooseCrossDeviceOps(k.devices.pointers());
  if (k.ops->name() != "cpu_all_reduce") {
    return absl::FailedPreconditionError(absl::StrCat(
        "allreduce: the cross-device ops for ", replicas, " CPU devices are \"",
        k.ops->name(), "\", not \"cpu_all_reduce\""));
  }
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
  for (int r = 0; r < replicas; ++r) {
    ASSIGN_OR_RETURN(Tensor t,
                     Tensor::Create(DType::kFloat32, {count},
                                    k.devices.devices[r]->allocator()));
    absl::Span<float> values = t.flat<float>();
    // ValueOf(r, i), without a division per element.
    int phase = (r * 5) % kPeriod;
    for (int64_t i = 0; i < count; ++i) {
      values[i] = static_cast<float>(1 + phase);
      if (++phase == kPeriod) phase = 0;
    }
    k.tensors.push_back(std::move(t));
  }
  // Written here, so that every page is in memory before anything is timed.
  k.a.assign(count, 1.0f);
  k.b.assign(count, 2.0f);
  k.c.assign(count, 0.0f);
  return result;
}

// `iterations` all-reduces by every replica, each on its thread of `crew`
// (replica 0 on this one, as Strategy::Run runs them); the
// first error of any replica. A failing replica leaves the barrier so that
// the others stop at once instead of at the timeout.
absl::Status AllReduces(Case& k, ReplicaThreads& crew, int64_t iterations) {
  std::vector<absl::Status> statuses(k.replicas);
  crew.RunEach([&](int replica) {
    for (int64_t it = 0; it < iterations; ++it) {
      absl::Status s = k.ops->AllReduce(*k.group, replica, ReduceOp::kSum,
                                        k.tensors[replica]);
      if (!s.ok()) {
        k.group->barrier().Leave(replica, s);
        statuses[replica] = s;
        return;
      }
    }
  });
  for (const absl::Status& s : statuses) {
    RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

// `iterations` passes of c = a + b, each worker on its own contiguous
// slice (no false sharing but at the slices' edges).
void MemoryPasses(Case& k, ReplicaThreads& crew, int64_t iterations) {
  const int64_t count = static_cast<int64_t>(k.c.size());
  const int workers = crew.num_replicas();
  crew.RunEach([&](int worker) {
    const int64_t begin = count * worker / workers;
    const int64_t end = count * (worker + 1) / workers;
    const float* a = k.a.data();
    const float* b = k.b.data();
    float* c = k.c.data();
    for (int64_t it = 0; it < iterations; ++it) {
      for (int64_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
    }
  });
}

// Every replica's tensor against the sum computed here, after exactly one
// all-reduce; and the baseline's output.
absl::Status Check(const Case& k) {
  float expected[kPeriod];
  for (int p = 0; p < kPeriod; ++p) {
    expected[p] = 0;
    for (int r = 0; r < k.replicas; ++r) expected[p] += ValueOf(r, p);
  }
  for (int r = 0; r < k.replicas; ++r) {
    absl::Span<const float> values = k.tensors[r].flat<float>();
    int phase = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] != expected[phase]) {
        return absl::InternalError(absl::StrCat(
            "allreduce: ", k.replicas, " replicas of ", k.bytes,
            " bytes: replica ", r, " element ", i, " is ", values[i],
            " after one all-reduce, want ", expected[phase]));
      }
      if (++phase == kPeriod) phase = 0;
    }
  }
  for (size_t i = 0; i < k.c.size(); ++i) {
    if (k.c[i] != 3.0f) {
      return absl::InternalError(
          absl::StrCat("allreduce: memory_bandwidth baseline element ", i,
                       " is ", k.c[i], ", want 3"));
    }
  }
  return absl::OkStatus();
}

absl::Duration Median(std::vector<absl::Duration> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int64_t IterationsFor(absl::Duration one) {
  if (one <= absl::ZeroDuration()) return kMaxIterations;
  return std::clamp<int64_t>(static_cast<int64_t>(kRepetitionTarget / one), 1,
                             kMaxIterations);
}

double GBps(double bytes, absl::Duration t) {
  return bytes / absl::ToDoubleSeconds(t) / 1e9;
}

std::string SizeName(int64_t bytes) {
  return absl::StrCat(bytes / kMiB, "MiB");
}

// The most bus bandwidth an all-reduce of n replicas can reach, as a
// fraction of c = a + b's bytes / time (see the top of this file).
double TrafficCeiling(int replicas) {
  const double n = replicas;
  return 3.0 * (n - 1) / (n * n);
}

// Measures one case and adds its row.
absl::Status RunCase(int replicas, int64_t bytes, ReplicaThreads& memory_crew,
                     BenchReport* report) {
  ASSIGN_OR_RETURN(std::unique_ptr<Case> made, MakeCase(replicas, bytes));
  Case& k = *made;
  ReplicaThreads replica_crew(replicas);

  // Warm-up, one of each; it also gives the check its input and the
  // repetitions their length.
  absl::Time start = absl::Now();
  RETURN_IF_ERROR(AllReduces(k, replica_crew, 1));
  const absl::Duration one_all_reduce = absl::Now() - start;
  start = absl::Now();
  MemoryPasses(k, memory_crew, 1);
  const absl::Duration one_pass = absl::Now() - start;
  RETURN_IF_ERROR(Check(k));
  // From here the tensors keep summing into themselves: the values grow to
  // infinity, which costs an add no more than a finite value does.

  const int64_t all_reduce_iterations = IterationsFor(one_all_reduce);
  const int64_t pass_iterations = IterationsFor(one_pass);
  std::vector<absl::Duration> all_reduce_times;
  std::vector<absl::Duration> pass_times;
  const absl::Time case_start = absl::Now();
  for (int rep = 0; rep < kMaxRepetitions; ++rep) {
    if (rep >= kMinRepetitions && absl::Now() - case_start >= kCaseTarget) {
      break;
    }
    start = absl::Now();
    RETURN_IF_ERROR(AllReduces(k, replica_crew, all_reduce_iterations));
    all_reduce_times.push_back((absl::Now() - start) / all_reduce_iterations);
    start = absl::Now();
    MemoryPasses(k, memory_crew, pass_iterations);
    pass_times.push_back((absl::Now() - start) / pass_iterations);
  }

  const double bus_bytes =
      static_cast<double>(bytes) * 2.0 * (replicas - 1) / replicas;
  const double memory_gbps =
      GBps(static_cast<double>(bytes), Median(pass_times));
  report->Add(
      absl::StrCat("allreduce/cpu/", replicas, "_replicas/", SizeName(bytes)),
      GBps(bus_bytes, Median(all_reduce_times)), "GB/s", "traffic_ceiling",
      TrafficCeiling(replicas) * memory_gbps);
  report->Note(absl::StrCat(
      "  ", replicas, " replicas, ", SizeName(bytes), ": c = a + b ran at ",
      memory_gbps, " GB/s; ceiling = ", TrafficCeiling(replicas), " of it"));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunAllReduceBench(const BenchConfig& config, BenchReport* report) {
  report->BeginFamily(
      "allreduce: local CPU all-reduce (MirroredStrategy's cpu_all_reduce), "
      "one thread per replica",
      "value: bus bandwidth, bytes * 2(n-1)/n / time per all-reduce "
      "(nccl-tests); baseline: the ceiling of the same memory traffic, "
      "3(n-1)/n^2 of c = a + b's bytes / time over arrays of the same bytes "
      "on every hardware thread (the least an all-reduce must move: every "
      "input read, every output written); ratio: the share of that ceiling "
      "reached, the target is >= 0.7 at 64 MiB");

  std::vector<int> replica_counts = {2, 4, 8};
  std::vector<int64_t> sizes = {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB,
                                256 * kMiB};
  if (config.quick) {
    replica_counts = {2};
    sizes = {64 * kMiB};
  }
  const int hardware_threads =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  report->Note(absl::StrCat(
      hardware_threads, " hardware threads; median of at least ",
      kMinRepetitions, " alternating repetitions per case (about ",
      absl::FormatDuration(kCaseTarget),
      " per case), each of back-to-back "
      "calls filling about ",
      absl::FormatDuration(kRepetitionTarget),
      "; every all-reduce result checked once against a sum computed here"));

  ReplicaThreads memory_crew(hardware_threads);
  for (int replicas : replica_counts) {
    for (int64_t bytes : sizes) {
      RETURN_IF_ERROR(RunCase(replicas, bytes, memory_crew, report));
    }
  }
  return absl::OkStatus();
}

}  // namespace distrt::bench
