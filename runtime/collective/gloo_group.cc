#include "runtime/collective/gloo_group.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gloo/allgatherv.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/common/logging.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "runtime/collective/gloo_store.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Gloo's exception types say little about the cause; its messages do. A
// timeout ("Read timeout", "Timed out waiting ...", "Connect timeout") is a
// peer that did not answer in time, DEADLINE_EXCEEDED; any other I/O error
// ("Connection closed by peer") is a peer or network gone, UNAVAILABLE.
absl::StatusCode IoErrorCode(const char* what) {
  const std::string message = absl::AsciiStrToLower(what);
  return absl::StrContains(message, "timeout") ||
                 absl::StrContains(message, "timed out")
             ? absl::StatusCode::kDeadlineExceeded
             : absl::StatusCode::kUnavailable;
}

// Gloo writes to its sockets with writev(), which raises SIGPIPE when the
// peer has closed its end; the default action kills the process, so a dead
// peer would kill this worker instead of failing the collective. While this
// is in scope, SIGPIPE is blocked on the calling thread (and on threads it
// creates: Gloo's event loop, started by CreateDevice), so such a write
// fails with EPIPE, which Gloo throws as an IoException. A SIGPIPE raised
// meanwhile is consumed before the mask is restored. Per thread, not
// process-wide: the process's own SIGPIPE disposition is not ours to change.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &old_mask_);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    // Leave alone what was blocked or pending before.
    consume_ = sigismember(&old_mask_, SIGPIPE) == 0 &&
               sigismember(&pending, SIGPIPE) == 0;
  }
  ~ScopedSigpipeBlock() {
    if (consume_) {
      const timespec no_wait = {0, 0};
      while (sigtimedwait(&sigpipe_, nullptr, &no_wait) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t sigpipe_;
  sigset_t old_mask_;
  bool consume_ = false;
};

// Calls `fn`, which calls Gloo, and returns what it threw as a Status whose
// message starts with `what`.
template <typename Fn>
absl::Status CatchGloo(const std::string& what, Fn fn) {
  ScopedSigpipeBlock no_sigpipe;
  try {
    fn();
    return absl::OkStatus();
  } catch (const gloo::IoException& e) {
    return absl::Status(IoErrorCode(e.what()), absl::StrCat(what, e.what()));
  } catch (const gloo::InvalidOperationException& e) {
    return absl::FailedPreconditionError(absl::StrCat(what, e.what()));
  } catch (const gloo::EnforceNotMet& e) {
    // A broken invariant inside Gloo, or arguments it refused.
    return absl::InternalError(absl::StrCat(what, e.what()));
  } catch (const gloo::Exception& e) {
    return absl::UnknownError(absl::StrCat(what, e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, e.what()));
  }
}

template <typename T>
void Sum(void* out, const void* a, const void* b, size_t n) {
  gloo::sum<T>(out, a, b, n);
}

// The time left until `deadline`, at least 1 ms: a wait of a negative
// timeout would mean Gloo's unset one.
std::chrono::milliseconds Left(std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()));
}

// Takes the result of an UnboundBuffer's waitSend / waitRecv: Gloo throws
// on a timeout or a peer's error, and returns false when the wait was
// aborted, which becomes an error naming `what` here.
void WaitFor(bool done, const char* what) {
  if (!done)
    throw gloo::IoException(absl::StrCat("the ", what, " was aborted"));
}

// The all-reduce of 2 ranks as one exchange each way: each rank sums half
// of the elements (rank 0 the first), receiving the other's copy of that
// half, then the two send each other their summed halves. Between 2
// processes Gloo's own paths were slower at small sizes (its ring took
// 1 MiB at 0.38 GB/s of bus bandwidth, this 0.9), or ignored the timeout
// (its BCube and AllreduceRingChunked). The waits together are bounded by
// `timeout`.
template <typename T>
void AllReduceSumOfTwo(gloo::Context& context, absl::Span<T> values,
                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const int peer = 1 - context.rank;
  const size_t half = values.size() / 2;
  T* const mine = values.data() + (context.rank == 0 ? 0 : half);
  T* const theirs = values.data() + (context.rank == 0 ? half : 0);
  const size_t mine_count = context.rank == 0 ? half : values.size() - half;
  const size_t theirs_count = values.size() - mine_count;
  // Uninitialised: every element is received before it is read.
  std::unique_ptr<T[]> scratch(new T[mine_count]);
  const uint64_t slot = context.nextSlot(2);
  std::unique_ptr<gloo::transport::UnboundBuffer> mine_buffer =
      context.createUnboundBuffer(mine, mine_count * sizeof(T));
  std::unique_ptr<gloo::transport::UnboundBuffer> theirs_buffer =
      context.createUnboundBuffer(theirs, theirs_count * sizeof(T));
  std::unique_ptr<gloo::transport::UnboundBuffer> incoming =
      context.createUnboundBuffer(scratch.get(), mine_count * sizeof(T));
  incoming->recv(peer, slot);
  theirs_buffer->send(peer, slot);
  WaitFor(incoming->waitRecv(Left(deadline)), "receive of the half to sum");
  WaitFor(theirs_buffer->waitSend(Left(deadline)), "send of the half to sum");
  gloo::sum<T>(mine, mine, scratch.get(), mine_count);
  theirs_buffer->recv(peer, slot + 1);
  mine_buffer->send(peer, slot + 1);
  WaitFor(theirs_buffer->waitRecv(Left(deadline)),
          "receive of the summed half");
  WaitFor(mine_buffer->waitSend(Left(deadline)), "send of the summed half");
}

}  // namespace

absl::StatusOr<std::unique_ptr<GlooGroup>> GlooGroup::Create(
    KvStore* store, const Options& options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("GlooGroup \"", options.prefix, "\": rank ", options.rank,
                     " is not in [0, size = ", options.size, ")"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GlooGroup \"", options.prefix, "\": timeout ",
                     absl::FormatDuration(options.timeout), " is not > 0"));
  }
  if (options.connect_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GlooGroup \"", options.prefix, "\": connect timeout ",
        absl::FormatDuration(options.connect_timeout), " is negative"));
  }
  if (options.prefix.empty()) {
    return absl::InvalidArgumentError(
        "GlooGroup: empty prefix (groups sharing a store need distinct ones)");
  }
  const std::string where =
      absl::StrCat("rank ", options.rank, " of ", options.size, " (group \"",
                   options.prefix, "\")");

  std::shared_ptr<gloo::transport::Device> device;
  absl::Status status =
      CatchGloo(absl::StrCat("GlooGroup: ", where, " cannot listen on ",
                             options.host, ": "),
                [&] {
                  gloo::transport::tcp::attr attr;
                  attr.hostname = options.host;
                  device = gloo::transport::tcp::CreateDevice(attr);
                });
  if (!status.ok()) return absl::UnavailableError(status.message());

  // Gloo's context timeout bounds both the rendezvous (its waits on the
  // store, connecting) and every collective (their Options default to it):
  // the connect timeout while connecting, then the collective one.
  const absl::Duration connect_timeout =
      options.connect_timeout > absl::ZeroDuration() ? options.connect_timeout
                                                     : options.timeout;
  auto context =
      std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
  GlooStore gloo_store(store, {options.prefix, connect_timeout});
  status = CatchGloo(absl::StrCat("GlooGroup: connecting ", where, ": "), [&] {
    context->setTimeout(
        std::chrono::milliseconds(absl::ToInt64Milliseconds(connect_timeout)));
    context->connectFullMesh(gloo_store, device);
    context->setTimeout(
        std::chrono::milliseconds(absl::ToInt64Milliseconds(options.timeout)));
  });
  if (!status.ok()) {
    // The store's own error keeps its code (DEADLINE_EXCEEDED for a peer
    // that never published its address), which the exception lost.
    if (absl::Status s = gloo_store.first_error(); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("GlooGroup: connecting ",
                                                 where, ": ", s.message()));
    }
    return status;
  }
  return std::unique_ptr<GlooGroup>(
      new GlooGroup(options, std::move(device), std::move(context)));
}

GlooGroup::GlooGroup(const Options& options,
                     std::shared_ptr<gloo::transport::Device> device,
                     std::shared_ptr<gloo::Context> context)
    : options_(options),
      device_(std::move(device)),
      context_(std::move(context)) {}

GlooGroup::~GlooGroup() { Close(); }

void GlooGroup::Close() {
  absl::MutexLock lock(&mu_);
  if (failure_.ok()) {
    failure_ = absl::CancelledError("this rank closed its connections");
  }
  ScopedSigpipeBlock no_sigpipe;  // closing may flush to a peer that left
  // The context's pairs use the device (its event loop thread), so they go
  // first; the device joins its thread.
  context_.reset();
  device_.reset();
}

template <typename Op>
absl::Status GlooGroup::Run(absl::string_view what, Op op) {
  absl::MutexLock lock(&mu_);
  const std::string where =
      absl::StrCat(what, " on rank ", options_.rank, " of ", options_.size,
                   " (group \"", options_.prefix, "\"): ");
  if (!failure_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, "the group failed earlier: ", failure_.message()));
  }
  absl::Status status = CatchGloo(where, op);
  if (!status.ok()) failure_ = status;
  return status;
}

// gloo::allreduce rather than the older AllreduceRingChunked class: it takes
// a per-call timeout (the context's), counts elements in size_t (the class
// in int, and bytes in int too), needs no per-buffer algorithm object
// (whose constructor allocates two buffers the size of the input), and is
// the entry point Gloo maintains. bench/gloo_allreduce_bench.cc compares the
// two.
template <typename T>
absl::Status GlooGroup::AllReduceSumImpl(absl::Span<T> values) {
  return Run("all-reduce", [&] {
    if (values.empty()) return;
    if (options_.size == 2 && values.size() >= 2 &&
        values.size() * sizeof(T) < options_.exchange_below_bytes) {
      AllReduceSumOfTwo(*context_, values, context_->getTimeout());
      return;
    }
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(values.data(), values.size());
    opts.setReduceFunction(&Sum<T>);
    if (options_.max_segment_bytes > 0) {
      opts.setMaxSegmentSize(options_.max_segment_bytes);
    }
    gloo::allreduce(opts);
  });
}

template <typename T>
absl::Status GlooGroup::BroadcastImpl(absl::Span<T> values, int root) {
  if (root < 0 || root >= options_.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "broadcast on rank ", options_.rank, " (group \"", options_.prefix,
        "\"): root ", root, " is not in [0, ", options_.size, ")"));
  }
  return Run("broadcast", [&] {
    if (values.empty()) return;
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(values.data(), values.size());
    opts.setRoot(root);
    gloo::broadcast(opts);
  });
}

template <typename T>
absl::StatusOr<std::vector<T>> GlooGroup::AllGatherImpl(
    absl::Span<const T> mine) {
  // Everyone's count first: allgatherv needs every rank's size up front.
  std::vector<int64_t> counts(options_.size, 0);
  counts[options_.rank] = static_cast<int64_t>(mine.size());
  RETURN_IF_ERROR(AllReduceSumImpl(absl::MakeSpan(counts)));
  std::vector<size_t> elements(counts.begin(), counts.end());
  size_t total = 0;
  for (size_t n : elements) total += n;
  std::vector<T> all(total);
  if (total == 0) return all;
  // In place: this rank's values go straight to their offset in the output,
  // which is all that allgatherv would do with a separate input (one copy,
  // not two, on the sparse-gradient path of every step).
  size_t offset = 0;
  for (int rank = 0; rank < options_.rank; ++rank) offset += elements[rank];
  std::copy(mine.begin(), mine.end(), all.begin() + offset);
  absl::Status s = Run("all-gather", [&] {
    gloo::AllgathervOptions opts(context_);
    opts.setOutput(all.data(), elements);
    gloo::allgatherv(opts);
  });
  RETURN_IF_ERROR(s);
  return all;
}

absl::StatusOr<std::vector<float>> GlooGroup::AllGather(
    absl::Span<const float> mine) {
  return AllGatherImpl(mine);
}
absl::StatusOr<std::vector<int64_t>> GlooGroup::AllGather(
    absl::Span<const int64_t> mine) {
  return AllGatherImpl(mine);
}

absl::Status GlooGroup::AllReduceSum(absl::Span<float> values) {
  return AllReduceSumImpl(values);
}
absl::Status GlooGroup::AllReduceSum(absl::Span<int64_t> values) {
  return AllReduceSumImpl(values);
}
absl::Status GlooGroup::AllReduceSum(absl::Span<double> values) {
  return AllReduceSumImpl(values);
}
absl::Status GlooGroup::Broadcast(absl::Span<float> values, int root) {
  return BroadcastImpl(values, root);
}
absl::Status GlooGroup::Broadcast(absl::Span<int64_t> values, int root) {
  return BroadcastImpl(values, root);
}

absl::Status GlooGroup::Barrier() {
  return Run("barrier", [&] {
    gloo::BarrierOptions opts(context_);
    gloo::barrier(opts);
  });
}

}  // namespace distrt
