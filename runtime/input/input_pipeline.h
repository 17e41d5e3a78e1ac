#ifndef DISTRT_RUNTIME_INPUT_INPUT_PIPELINE_H_
#define DISTRT_RUNTIME_INPUT_INPUT_PIPELINE_H_

// InputPipeline: one worker's dataset, as tf.data's
//   dataset.shuffle(seed).repeat(num_epochs).batch(global).prefetch(n)
// after distribution: it holds this worker's examples (ReadInputShard) and
// hands out one global step at a time, already split over the worker's
// replicas.
//
// Each epoch visits every example exactly once, in the order of the examples
// or, with shuffle, in a permutation that depends only on (seed, epoch): runs
// with the same seed see the same steps, whatever the prefetch setting.
// A step takes the next num_replicas * per_replica_batch_size examples of
// the epoch, and replica r gets the r-th contiguous slice of them. The last
// step of an epoch takes what is left: split as evenly as possible (earlier
// replicas get one more), so a replica may get an empty batch. Steps never
// span two epochs.
//
//   epoch 0: step 0, step 1, ..., step S-1 (possibly short)
//   epoch 1: ...
//   after num_epochs epochs: OUT_OF_RANGE, for every later Next() too.
//
// With prefetch > 0 a background thread, owned by the pipeline, builds up to
// `prefetch` steps ahead into a bounded queue while the caller trains; the
// destructor stops and joins it without waiting for anyone to consume.
//
// Thread-safety: Next() may be called from any thread, also concurrently
// (each step goes to exactly one caller), but not concurrently with the
// destructor.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/input/batch.h"
#include "runtime/input/example.h"

namespace distrt {

// One global step of one worker.
struct InputStep {
  int64_t epoch = 0;          // 0-based
  int64_t step_in_epoch = 0;  // 0-based
  // One batch per local replica, num_replicas of them. In a short last step
  // a batch may have size 0; it then still has the dataset's num_dense.
  std::vector<Batch> replicas;

  // The examples of all replicas together.
  int64_t num_examples() const;
};

class InputPipeline {
 public:
  struct Options {
    // Examples per replica in a full step; >= 1.
    int64_t per_replica_batch_size = 32;
    // Replicas of this worker that take a batch each step; >= 1.
    int num_replicas = 1;
    // Whether each epoch visits the examples in a new pseudo-random order.
    // Without, every epoch is in the order of the examples given.
    bool shuffle = false;
    // The epochs' orders are a function of (seed, epoch) only.
    uint64_t seed = 0;
    // Epochs before OUT_OF_RANGE; 0 repeats forever. >= 0.
    int64_t num_epochs = 1;
    // Steps built ahead by a background thread; 0: no thread, Next() builds
    // the step itself. >= 0.
    int prefetch = 2;
  };

  // INVALID_ARGUMENT naming the option for a bad option, when no examples
  // are to be repeated forever (Next() could never return a step), or when
  // the examples cannot be batched together: dense feature counts that
  // differ, or ids and values of different sizes (naming the example's
  // index in `examples`). Checked here rather than at the step that meets
  // the example, possibly hours into training.
  static absl::StatusOr<std::unique_ptr<InputPipeline>> Create(
      std::vector<Example> examples, Options options);

  // Stops and joins the prefetch thread: returns after at most the one step
  // it may be building, even with a full queue.
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // The next step, waiting for the prefetch thread when it is behind.
  // OUT_OF_RANGE "end of input after N epochs" once all epochs were
  // returned, and again on every later call. An error building a step
  // comes after the steps before it, and then on every later call.
  absl::StatusOr<InputStep> Next();

  const Options& options() const { return options_; }
  int64_t examples_per_epoch() const { return num_examples_; }
  // Including a short last step.
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  InputPipeline(std::vector<Example> examples, Options options,
                int64_t num_dense);

  // The step after the last one built; the same error once one was
  // returned. Called with produce_mu_ held.
  absl::StatusOr<InputStep> Produce();
  // Puts epoch_'s order into examples_. Called with produce_mu_ held.
  void ArrangeEpoch();
  // The prefetch thread's body.
  void PrefetchLoop();

  // Constant after construction.
  const Options options_;
  const int64_t num_examples_;
  const int64_t num_dense_;
  const int64_t steps_per_epoch_;

  // Step building: by the prefetch thread when there is one, else by
  // Next(). The lock is uncontended with a prefetch thread; without one it
  // makes concurrent Next() calls safe.
  std::mutex produce_mu_;
  // Guarded by produce_mu_:
  // The examples, arranged in the current epoch's order; arrangement_[i]
  // is the index (in Create's `examples`) of examples_[i].
  std::vector<Example> examples_;
  std::vector<int64_t> arrangement_;
  int64_t epoch_ = 0;
  int64_t step_in_epoch_ = 0;
  absl::Status final_status_;  // once not OK, every Produce() returns it

  // The prefetch queue.
  std::mutex queue_mu_;
  std::condition_variable queue_not_full_;   // or stopping_
  std::condition_variable queue_not_empty_;  // a step or an error is queued
  // Guarded by queue_mu_:
  // Ends with the final error once the thread has built it; that entry is
  // never popped.
  std::deque<absl::StatusOr<InputStep>> queue_;
  bool stopping_ = false;

  std::thread prefetch_thread_;  // not joinable when prefetch == 0
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_PIPELINE_H_
