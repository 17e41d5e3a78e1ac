#ifndef DISTRT_RUNTIME_COLLECTIVE_GLOO_GROUP_H_
#define DISTRT_RUNTIME_COLLECTIVE_GLOO_GROUP_H_

// GlooGroup: `size` processes (ranks; one per worker) that run collectives
// with each other over TCP, with Gloo. The cross-process layer under
// MultiWorkerMirroredStrategy: workers all-reduce their gradients with each
// other, with no parameter server in between.
//
// Create() connects a full mesh: each rank listens on Options.host (a port
// the OS picks), publishes its address under Options.prefix in a KvStore
// that every rank reaches (the chief's RendezvousServer, or one
// InMemoryKvStore shared by threads in tests), waits for every other rank's
// address and connects to it. It returns once this rank is connected to all
// the others, or fails after Options.timeout.
//
// Collectives are meetings: every rank must make the same calls, in the same
// order, with the same number of elements. A rank that does not arrive
// within Options.timeout, or whose process dies, fails the collective on the
// others (DEADLINE_EXCEEDED, UNAVAILABLE); nothing waits longer than the
// timeout. Gloo then leaves its connections in an unknown state, so a failed
// group stays failed: every later call returns FAILED_PRECONDITION with the
// first error. Go on with a new group (a new prefix).
//
// Gloo reports errors by exceptions; they stop here. Every error names the
// operation, this rank and the group's prefix, with Gloo's message.
//
// Signals: Gloo writes with writev(), which raises SIGPIPE when a peer has
// closed its connection. GlooGroup blocks SIGPIPE on the threads running
// Gloo (the caller's during each call, and Gloo's event-loop thread), so a
// dead peer fails the collective instead of killing the process; the
// process's SIGPIPE disposition is left as it is.
//
// Thread-safety: one collective at a time per group. Calls from several
// threads are serialised, but every rank must issue the same sequence, so
// the caller must order them (in practice: one thread per group). rank(),
// size() and prefix() may be called from any thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collective/cross_worker_collective.h"
#include "runtime/collective/kv_store.h"

namespace gloo {
class Context;
namespace transport {
class Device;
}  // namespace transport
}  // namespace gloo

namespace distrt {

class GlooGroup : public CrossWorkerCollective {
 public:
  struct Options {
    // This process's rank, in [0, size).
    int rank = 0;
    // Number of ranks, >= 1.
    int size = 1;
    // Address of this machine that the TCP transport listens on and
    // publishes to its peers: one the other workers can reach (the worker's
    // host in the cluster spec). The default only works within one machine.
    std::string host = "127.0.0.1";
    // How long a collective waits for data from a peer before failing. Long
    // enough for the slowest worker to reach the collective (a step of work
    // apart, or the chief's checkpoint).
    absl::Duration timeout = absl::Seconds(60);
    // How long Create waits for every peer to join; zero: `timeout`. Jobs
    // start their tasks in any order, so joining may take much longer than
    // a collective should.
    absl::Duration connect_timeout = absl::ZeroDuration();
    // Names this group's keys in the store ("<prefix>/<rank>"). Every rank
    // of a group uses the same prefix; a new group (a restart, another set
    // of ranks) needs a new one, because a store never forgets keys.
    std::string prefix = "gloo";
    // Largest message of the ring all-reduce (gloo::allreduce); 0 is
    // Gloo's default, 1 MiB, which PyTorch's Gloo backend keeps. Larger
    // segments cost fewer hand-offs per byte while still overlapping sums
    // with transfers: 64 MiB between 2 processes went 0.89 / 0.93 / 1.03
    // -> 0.91 / 1.04 / 1.09 GB/s of bus bandwidth with 4 MiB, and from
    // 0.91-1.10 to 1.10-1.18 of PyTorch's in the same runs
    // (bench/cross_process_allreduce.py, 3 alternated pairs, 2026-11-29);
    // between 3 processes the change was within the noise. Small values are
    // a test knob: they make small buffers take the multi-segment paths.
    size_t max_segment_bytes = size_t{4} << 20;
    // Between 2 ranks, all-reduces of fewer bytes are one exchange of
    // halves each way (see gloo_group.cc), larger ones Gloo's ring, whose
    // segments overlap the sums with the transfers. 0: always the ring.
    // Must be the same on both ranks (else they wait for each other in
    // different algorithms until the timeout).
    size_t exchange_below_bytes = size_t{32} << 20;
  };

  // Connects this rank to the others (see the top). `store` is only used
  // here; it is not kept. INVALID_ARGUMENT for a bad rank, size, timeout or
  // empty prefix; UNAVAILABLE when the transport cannot listen on `host`;
  // the store's error (DEADLINE_EXCEEDED naming the rank whose address
  // never came) or Gloo's when the rendezvous fails.
  static absl::StatusOr<std::unique_ptr<GlooGroup>> Create(
      KvStore* store, const Options& options);

  // Closes the connections; peers still using them get an error.
  ~GlooGroup() override;

  // Closes the connections now, so that peers blocked in a collective with
  // this rank fail at once instead of at their timeout; every later call
  // fails. For a rank that has given up on the group after an error.
  // Idempotent; waits for a collective in progress on another thread.
  void Close() override;

  GlooGroup(const GlooGroup&) = delete;
  GlooGroup& operator=(const GlooGroup&) = delete;

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  const std::string& prefix() const { return options_.prefix; }

  absl::Status AllReduceSum(absl::Span<float> values) override;
  absl::Status AllReduceSum(absl::Span<int64_t> values) override;
  absl::Status AllReduceSum(absl::Span<double> values) override;
  absl::Status Broadcast(absl::Span<float> values, int root) override;
  absl::Status Broadcast(absl::Span<int64_t> values, int root) override;
  // Two collectives: the counts (an all-reduce), then Gloo's allgatherv.
  absl::StatusOr<std::vector<float>> AllGather(
      absl::Span<const float> mine) override;
  absl::StatusOr<std::vector<int64_t>> AllGather(
      absl::Span<const int64_t> mine) override;
  absl::Status Barrier() override;

 private:
  GlooGroup(const Options& options,
            std::shared_ptr<gloo::transport::Device> device,
            std::shared_ptr<gloo::Context> context);

  template <typename T>
  absl::Status AllReduceSumImpl(absl::Span<T> values);
  template <typename T>
  absl::Status BroadcastImpl(absl::Span<T> values, int root);
  template <typename T>
  absl::StatusOr<std::vector<T>> AllGatherImpl(absl::Span<const T> mine);
  // Runs `op` (which calls Gloo) unless the group failed before; turns
  // Gloo's exceptions into the Status that fails the group.
  template <typename Op>
  absl::Status Run(absl::string_view what, Op op);

  const Options options_;

  absl::Mutex mu_;
  // Gloo's connections; used only with mu_ held (a Gloo context runs one
  // collective at a time).
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  // The first collective error; OK while there was none.
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_GLOO_GROUP_H_
