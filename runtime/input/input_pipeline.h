#ifndef DISTRT_RUNTIME_INPUT_INPUT_PIPELINE_H_
#define DISTRT_RUNTIME_INPUT_INPUT_PIPELINE_H_

// InputPipeline: one worker's dataset after distribution, as tf.data's
//
//   files.interleave(read, cycle_length, block_length)   (file pipelines)
//        .map(parse, num_parallel_calls=parse_threads)  (order preserved)
//        .shuffle(shuffle_buffer, seed)                  (with shuffle)
//        .repeat(num_epochs)
//        .batch(global)  -> split over the worker's replicas
//        .prefetch(prefetch)
//
// It streams: a file pipeline holds no more than its buffers (see
// read_ahead_bound()), never the data set, so training data may be far
// larger than memory. An in-memory pipeline (Create(examples)) goes through
// the same shuffle, batch and prefetch stages over examples it holds.
//
// Steps. A step takes the next num_replicas * per_replica_batch_size
// examples of the epoch and replica r gets the r-th contiguous slice. The
// last step of an epoch takes what is left: split as evenly as possible
// (earlier replicas get one more), so a replica may get an empty batch.
// Steps never span two epochs.
//
//   epoch 0: step 0, step 1, ..., step S-1 (possibly short)
//   epoch 1: ...
//   after num_epochs epochs: OUT_OF_RANGE, for every later Next() too.
//
// Order and determinism. The steps are a function of the input (files and
// shard, or the examples), the seed and these options only:
// cycle_length, block_length (which record comes next), shuffle and
// shuffle_buffer (how far examples move), seed, and, through the shard,
// the number of input pipelines and the sharding policy; also
// per_replica_batch_size and num_replicas (how they are cut into steps).
// parse_threads, records_per_parse_chunk and prefetch change only speed and
// how much is read ahead (memory), never which steps come in which order.
// Shuffling draws from a buffer (tf.data's shuffle): fill it, then each
// example out is drawn uniformly from the buffer and the next one read
// takes its place; its generator is seeded from (seed, epoch), so every
// epoch is shuffled anew; at the end of an epoch the buffer drains. A
// buffer of the whole epoch (the in-memory default) is a uniform
// permutation; a smaller one moves each example at most a few buffers
// from where it was read.
//
// Resuming. Each step carries `position`, from which Create(..., &position)
// continues a file pipeline over the same shard, format and options
// (FAILED_PRECONDITION naming what differs otherwise). The position holds
// the interleave's state exactly (epoch, next file, each open file's record
// position, the turn and block) as of the last example that entered the
// shuffle buffer; what the buffer held then is dropped. So, compared with
// an uninterrupted run, the resumed one, in the epoch it resumes in,
//   - repeats no example, and
//   - skips at most the examples the shuffle buffer held: fewer than
//     shuffle_buffer (none without shuffle: the resume is then exact, and
//     continues with the same steps);
// and later epochs are whole. A resumed epoch is shuffled from (seed,
// epoch) as a fresh one, so its order differs from the uninterrupted
// run's.
//
// Bad input (file pipelines). Options::input_errors: kFail ends the
// pipeline at the first bad record, after the steps before it; kSkip drops
// records that do not parse or that do not fit the others (another number
// of dense features or embedding groups) and the rest of damaged files,
// counts them (records_skipped()), and fails with INVALID_ARGUMENT, naming
// the share and the last error, once more than max_bad_fraction of the
// records read were bad, judged once min_records_for_fraction were read or
// at the end of an epoch.
//
// Threads. A file pipeline reads on one thread of its own and parses on
// parse_threads others; with prefetch > 0 a thread builds up to `prefetch`
// steps ahead into a bounded queue while the caller trains. All are owned
// by the pipeline; the destructor stops and joins them without waiting for
// anyone to consume. Next() may be called from any thread, also
// concurrently (each step goes to exactly one caller), but not
// concurrently with the destructor. The counters may be read from any
// thread. Options::log is called from the thread building steps.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/batch.h"
#include "runtime/input/example.h"
#include "runtime/input/example_source.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_error_policy.h"
#include "runtime/input/input_position.h"
#include "runtime/input/record_reader.h"
#include "runtime/input/shuffle_buffer.h"

namespace distrt {

// One global step of one worker.
struct InputStep {
  int64_t epoch = 0;          // 0-based
  int64_t step_in_epoch = 0;  // 0-based
  // One batch per local replica, num_replicas of them. In a short last step
  // a batch may have size 0; it then still has the dataset's num_dense.
  std::vector<Batch> replicas;
  // Where the input continues after this step (see "Resuming" above).
  InputPosition position;

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
    // Without, every epoch is in the order read (in-memory: as given).
    bool shuffle = false;
    // The shuffle's draws are a function of (seed, epoch) only.
    uint64_t seed = 0;
    // Examples the shuffle draws from; >= 0. 0: 10,000 for a file
    // pipeline, every example for an in-memory one.
    int64_t shuffle_buffer = 0;
    // Epochs before OUT_OF_RANGE; 0 repeats forever. >= 0.
    int64_t num_epochs = 1;
    // Steps built ahead by a background thread; 0: no thread, Next() builds
    // the step itself. >= 0.
    int prefetch = 2;

    // File pipelines only:
    // Files read at once, a block at a time from each in turn; >= 1,
    // capped at the number of files.
    int cycle_length = 4;
    // Records taken from a file before the next one's turn; >= 1.
    int block_length = 1;
    // Threads parsing records; >= 1.
    int parse_threads = 2;
    // Records handed to a parse thread at once, so that synchronising is
    // paid per chunk; >= 1.
    int records_per_parse_chunk = 64;
    // Bad records: see "Bad input" above.
    InputErrorPolicy input_errors = InputErrorPolicy::kFail;
    // In [0, 1]: 0.1% by default, a few damaged records in a large data
    // set, not a format that does not fit it.
    double max_bad_fraction = 0.001;
    // >= 0.
    int64_t min_records_for_fraction = 1000;
    // Lines for the log (damaged files, the first bad records); may be
    // empty.
    std::function<void(absl::string_view)> log;
  };

  // An in-memory pipeline over `examples`. INVALID_ARGUMENT naming the
  // option for a bad option, when no examples are to be repeated forever
  // (Next() could never return a step), or when the examples cannot be
  // batched together: dense feature counts or numbers of embedding groups
  // that differ, or ids and values of different sizes (naming the
  // example's index in `examples`). Checked here rather than at the step
  // that meets the example, possibly hours into training.
  static absl::StatusOr<std::unique_ptr<InputPipeline>> Create(
      std::vector<Example> examples, Options options);

  // A streaming pipeline over `shard`'s files in `format`, continuing from
  // `resume` when given (a position of a pipeline over the same shard,
  // format and interleave options; it need not outlive the call).
  // INVALID_ARGUMENT for a bad option or a position that does not fit;
  // FAILED_PRECONDITION for a position of another input, naming what
  // differs; the error opening a resumed file. Errors reading come from
  // Next(), after the steps before them.
  static absl::StatusOr<std::unique_ptr<InputPipeline>> Create(
      InputShard shard, std::shared_ptr<const RecordFormat> format,
      Options options, const InputPosition* resume = nullptr);

  // Stops and joins the pipeline's threads: returns after at most the step
  // being built, even with a full queue.
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // The next step, waiting for the prefetch thread when it is behind.
  // OUT_OF_RANGE "end of input after N epochs" once all epochs were
  // returned, and again on every later call. An error building a step
  // comes after the steps before it, and then on every later call.
  absl::StatusOr<InputStep> Next();

  const Options& options() const { return options_; }
  // In-memory pipelines: the examples of an epoch and its steps (including
  // a short last one). -1 for a file pipeline, which does not know them
  // before reading an epoch.
  int64_t examples_per_epoch() const { return num_examples_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

  // Records taken in (a file pipeline's, of its shard; an in-memory one's
  // examples) and of them dropped as bad, so far. Any thread.
  int64_t records_read() const;
  int64_t records_skipped() const;

  // A file pipeline reads at most this many records of its shard ahead of
  // the examples in the steps Next() returned:
  //   shuffle_buffer (with shuffle)
  //   + (prefetch + 1) * num_replicas * per_replica_batch_size
  //   + (2 * parse_threads + 2) * records_per_parse_chunk.
  // (With DATA sharding it also reads, and drops, the other pipelines'
  // records in between.)
  int64_t read_ahead_bound() const;

 private:
  InputPipeline(std::unique_ptr<ExampleSource> source, Options options,
                int64_t shuffle_buffer, int64_t num_examples, int64_t num_dense,
                int64_t read_ahead);

  static absl::Status Validate(const Options& options);
  static absl::StatusOr<std::unique_ptr<InputPipeline>> Start(
      std::unique_ptr<ExampleSource> source, Options options,
      int64_t shuffle_buffer, int64_t num_examples, int64_t num_dense,
      int64_t read_ahead);

  // The step after the last one built; the same error once one was
  // returned. Called with produce_mu_ held.
  absl::StatusOr<InputStep> Produce();
  // Logs the end of epoch_ and starts the next. Called with produce_mu_
  // held.
  void EndEpoch();
  // The next example of the shuffled stream (or an event). Called with
  // produce_mu_ held.
  absl::StatusOr<SourceEvent> NextShuffled(Example* example);
  // The prefetch thread's body.
  void PrefetchLoop();

  // Constant after construction.
  const Options options_;
  const int64_t num_examples_;
  const int64_t steps_per_epoch_;
  const int64_t read_ahead_;

  // Step building: by the prefetch thread when there is one, else by
  // Next(). The lock is uncontended with a prefetch thread; without one it
  // makes concurrent Next() calls safe.
  std::mutex produce_mu_;
  // Guarded by produce_mu_:
  const std::unique_ptr<ExampleSource> source_;  // its Cancel(): any thread
  std::optional<ShuffleBuffer> shuffle_;         // with shuffle
  bool source_epoch_ended_ = false;  // the shuffle buffer is draining
  int64_t epoch_ = 0;
  int64_t step_in_epoch_ = 0;
  int64_t examples_in_epoch_ = 0;
  // Examples of the current epoch that this pipeline gave (a resumed one
  // gives only the rest of its first epoch), for the epoch's log line.
  int64_t delivered_in_epoch_ = 0;
  int64_t num_dense_ = 0;      // for empty batches: that of the examples seen
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
