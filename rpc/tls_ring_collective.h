#ifndef DISTRT_RPC_TLS_RING_COLLECTIVE_H_
#define DISTRT_RPC_TLS_RING_COLLECTIVE_H_

// TlsRingCollective: the workers' collectives (CrossWorkerCollective) over
// the job's mutual TLS and cluster token, for jobs that have them. Gloo's
// TCP pairs (GlooGroup) can be neither authenticated nor encrypted
// (Debian's Gloo has no TLS transport): whoever reached a pair's listener
// first took a worker's place, and gradients crossed the wire readable.
//
// The ranks form a ring. Create() listens on Options.host (a port the OS
// picks), publishes "host:port" under "<prefix>/<rank>" in the KvStore (the
// chief's rendezvous, itself behind the job's TLS and token), connects to
// its right-hand neighbour (rank + 1) and accepts its left-hand one
// (rank - 1), then stops listening. Two connections a rank, whatever the
// size, where Gloo's full mesh holds size - 1.
//
// Who may pair:
//   - every connection is a TLS session (rpc/data_plane_tls.h) in which
//     both ends prove they hold a certificate of the job's CA, and the
//     connecting end checks that the listener's names the host it dialled;
//   - the connecting end's hello then carries the job's token, the group's
//     prefix and its rank; the listener pairs only with a hello naming its
//     left-hand rank in this group with the job's token (compared in
//     constant time);
//   - anything else (a failed or slow handshake, another token, another
//     rank or group, garbage) is closed, logged, and the listener waits on:
//     a stranger who connects first is dropped, never paired.
//
// Algorithms: all-reduce is a ring reduce-scatter then all-gather
// (2 (size - 1) steps, each moving 1/size of the bytes each way);
// broadcast passes segments along the ring from the root; all-gather moves
// each rank's block size - 1 steps round the ring; a barrier is an
// all-reduce of one number. Every message carries the call's number and its
// byte count, so ranks that make different calls fail naming both instead
// of reading each other's bytes as numbers.
//
// Failures, as GlooGroup's: a rank that does not arrive within
// Options.timeout, or whose process dies, fails the collective on the
// others (DEADLINE_EXCEEDED, UNAVAILABLE); a failed group stays failed
// (FAILED_PRECONDITION with the first error); Close() ends it at once.
//
// Thread-safety: one collective at a time (calls are serialised); every
// rank must make the same calls in the same order. rank() and size() may
// be called from any thread.

#include <cstdint>
#include <functional>
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
#include "rpc/data_plane_tls.h"
#include "runtime/collective/cross_worker_collective.h"
#include "runtime/collective/kv_store.h"

namespace distrt::rpc {

class TlsRingCollective : public CrossWorkerCollective {
 public:
  struct Options {
    // This process's rank, in [0, size), and the number of ranks (>= 1).
    int rank = 0;
    int size = 1;
    // The address of this machine that the ring listens on and publishes:
    // the worker's host in the cluster spec. Its certificate must name it.
    std::string host = "127.0.0.1";
    // How long a collective waits for a peer; how long Create waits for
    // both neighbours (zero: `timeout`).
    absl::Duration timeout = absl::Seconds(60);
    absl::Duration connect_timeout = absl::ZeroDuration();
    // How long a connection to the listener has to finish its handshake and
    // hello, so that a stranger who connects and says nothing delays the
    // real neighbour by at most this.
    absl::Duration hello_timeout = absl::Seconds(5);
    // Names this group's keys in the store ("<prefix>/<rank>"); a new group
    // needs a new one.
    std::string prefix = "ring";
    // The job's TLS and token. Required: without TLS, use GlooGroup.
    std::shared_ptr<const DataPlaneTls> tls;
    // Where refused connections are said (peer and reason); null: nowhere.
    std::function<void(absl::string_view)> log;
  };

  // Connects this rank to its neighbours (see the top). `store` is used
  // only here. INVALID_ARGUMENT for bad options; UNAVAILABLE when it cannot
  // listen on `host` or reach the right-hand neighbour; the store's error
  // (DEADLINE_EXCEEDED naming the rank whose address never came);
  // DEADLINE_EXCEEDED when the left-hand neighbour never paired.
  static absl::StatusOr<std::unique_ptr<TlsRingCollective>> Create(
      KvStore* store, const Options& options);
  ~TlsRingCollective() override;  // Close()

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  absl::Status AllReduceSum(absl::Span<float> values) override;
  absl::Status AllReduceSum(absl::Span<int64_t> values) override;
  absl::Status AllReduceSum(absl::Span<double> values) override;
  absl::Status Broadcast(absl::Span<float> values, int root) override;
  absl::Status Broadcast(absl::Span<int64_t> values, int root) override;
  absl::StatusOr<std::vector<float>> AllGather(
      absl::Span<const float> mine) override;
  absl::StatusOr<std::vector<int64_t>> AllGather(
      absl::Span<const int64_t> mine) override;
  absl::Status Barrier() override;
  void Close() override;

 private:
  class Link;  // one TLS connection to a neighbour

  TlsRingCollective(const Options& options, std::unique_ptr<Link> left,
                    std::unique_ptr<Link> right);

  // Create's phases. The right-hand link: the neighbour's published address
  // read from `store`, a TLS session to it, and its answer to this rank's
  // hello.
  static absl::StatusOr<std::unique_ptr<Link>> ConnectToRight(
      KvStore* store, const Options& options, absl::Time deadline);
  // The left-hand link: connections on `listen_fd` until one completes the
  // left-hand rank's hello with the job's token; every other one is closed,
  // logged and counted in `refused`.
  static absl::StatusOr<std::unique_ptr<Link>> AcceptFromLeft(
      int listen_fd, const Options& options, absl::string_view where,
      absl::Time deadline, int& refused);
  // Reads the hello on a newly accepted `link` and answers it: empty when it
  // is the left-hand rank's, else why it is refused.
  static std::string AnswerHello(Link& link, const Options& options,
                                 absl::Time hello_by);

  template <typename T>
  absl::Status RingAllReduce(absl::Span<T> values);
  template <typename T>
  absl::Status RingBroadcast(absl::Span<T> values, int root);
  template <typename T>
  absl::StatusOr<std::vector<T>> RingAllGather(absl::Span<const T> mine);
  // Sends `out` to the right-hand rank while receiving `in` from the
  // left-hand one, as message `call`.
  absl::Status Exchange(absl::Span<const char> out, absl::Span<char> in,
                        uint64_t call, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The group's first error, once it has one; otherwise starts a call.
  absl::Status BeginCall(absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status EndCall(absl::string_view what, absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int rank_;
  const int size_;
  const std::string prefix_;
  const absl::Duration timeout_;
  // Null for a group of one. Never replaced, so Close() may shut their
  // sockets down while a collective holds mu_; used by collectives only
  // under mu_.
  const std::unique_ptr<Link> left_;
  const std::unique_ptr<Link> right_;
  absl::Mutex mu_;
  uint64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_TLS_RING_COLLECTIVE_H_
