#include "runtime/input/input_pipeline.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/input/file_example_source.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The shuffle buffer of a file pipeline when none is given (tf.data
// programs commonly use 10,000 for data that does not fit in memory).
constexpr int64_t kDefaultFileShuffleBuffer = 10000;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Examples held in memory, repeated num_epochs times. Each example is
// copied as it is taken (the shuffle buffer and the batches own theirs).
class MemoryExampleSource : public ExampleSource {
 public:
  MemoryExampleSource(std::vector<Example> examples, int64_t num_epochs)
      : examples_(std::move(examples)), num_epochs_(num_epochs) {}

  absl::StatusOr<SourceEvent> Next(Example* example) override {
    if (num_epochs_ > 0 && epoch_ >= num_epochs_) {
      return SourceEvent::kEndOfInput;
    }
    if (next_ < examples_.size()) {
      *example = examples_[next_++];
      ++taken_;
      return SourceEvent::kExample;
    }
    next_ = 0;
    ++epoch_;
    return SourceEvent::kEndOfEpoch;
  }

  InputPosition Position() const override {
    InputPosition position;
    position.epoch = epoch_;
    position.records_in_epoch = static_cast<int64_t>(next_);
    return position;
  }

  // Read from other threads: the count is atomic.
  int64_t records_read() const override { return taken_.load(); }
  int64_t records_skipped() const override { return 0; }

 private:
  const std::vector<Example> examples_;
  const int64_t num_epochs_;
  int64_t epoch_ = 0;
  size_t next_ = 0;
  std::atomic<int64_t> taken_{0};
};

}  // namespace

int64_t InputStep::num_examples() const {
  int64_t total = 0;
  for (const Batch& batch : replicas) total += batch.size;
  return total;
}

absl::Status InputPipeline::Validate(const Options& options) {
  if (options.per_replica_batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("per_replica_batch_size must be at least 1, not ",
                     options.per_replica_batch_size));
  }
  if (options.num_replicas < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_replicas must be at least 1, not ", options.num_replicas));
  }
  // Keeps the global batch size, and the arithmetic on it, within int64.
  if (options.per_replica_batch_size >
      std::numeric_limits<int64_t>::max() / 2 / options.num_replicas) {
    return absl::InvalidArgumentError(absl::StrCat(
        "per_replica_batch_size ", options.per_replica_batch_size,
        " times num_replicas ", options.num_replicas, " is too large"));
  }
  if (options.num_epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_epochs must be positive, or 0 to repeat forever, "
                     "not ",
                     options.num_epochs));
  }
  if (options.prefetch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefetch must be 0 (no prefetch thread) or more, not ",
                     options.prefetch));
  }
  if (options.shuffle_buffer < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shuffle_buffer must be 0 (the default) or more, not ",
                     options.shuffle_buffer));
  }
  struct AtLeastOne {
    const char* name;
    int value;
  };
  for (const AtLeastOne& o :
       {AtLeastOne{"cycle_length", options.cycle_length},
        AtLeastOne{"block_length", options.block_length},
        AtLeastOne{"parse_threads", options.parse_threads},
        AtLeastOne{"records_per_parse_chunk",
                   options.records_per_parse_chunk}}) {
    if (o.value < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(o.name, " must be at least 1, not ", o.value));
    }
  }
  if (!(options.max_bad_fraction >= 0 && options.max_bad_fraction <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_bad_fraction must be in [0, 1], not ", options.max_bad_fraction));
  }
  if (options.min_records_for_fraction < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_records_for_fraction must be 0 or more, not ",
                     options.min_records_for_fraction));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<InputPipeline>> InputPipeline::Create(
    std::vector<Example> examples, Options options) {
  RETURN_IF_ERROR(Validate(options));
  if (examples.empty() && options.num_epochs == 0) {
    return absl::InvalidArgumentError(
        "no examples to repeat forever (num_epochs 0): Next() would never "
        "return a step");
  }
  // What MakeBatch would reject, found before training starts and named by
  // the example's place in the input rather than in some shuffled batch.
  const int64_t num_dense =
      examples.empty() ? 0 : static_cast<int64_t>(examples[0].dense.size());
  const size_t num_groups = examples.empty() ? 0 : examples[0].groups.size();
  for (size_t i = 0; i < examples.size(); ++i) {
    if (static_cast<int64_t>(examples[i].dense.size()) != num_dense) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, " has ", examples[i].dense.size(),
                       " dense features, example 0 has ", num_dense));
    }
    if (examples[i].ids.size() != examples[i].values.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", i, " has ", examples[i].ids.size(), " sparse ids but ",
          examples[i].values.size(), " values"));
    }
    if (examples[i].groups.size() != num_groups) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, " has ", examples[i].groups.size(),
                       " embedding groups, example 0 has ", num_groups));
    }
  }
  const int64_t num_examples = static_cast<int64_t>(examples.size());
  const int64_t shuffle_buffer =
      options.shuffle_buffer > 0 ? options.shuffle_buffer : num_examples;
  const int64_t num_epochs = options.num_epochs;
  return Start(
      std::make_unique<MemoryExampleSource>(std::move(examples), num_epochs),
      std::move(options), shuffle_buffer, num_examples, num_dense,
      /*read_ahead=*/0);
}

absl::StatusOr<std::unique_ptr<InputPipeline>> InputPipeline::Create(
    InputShard shard, std::shared_ptr<const RecordFormat> format,
    Options options, const InputPosition* resume) {
  RETURN_IF_ERROR(Validate(options));
  if (format == nullptr) {
    return absl::InvalidArgumentError("no record format to read the files in");
  }
  if (shard.index < 0 || shard.count < 1 || shard.index >= shard.count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard ", shard.index, " of ", shard.count, " is not a shard"));
  }
  FileExampleSource::Options source;
  source.cycle_length = options.cycle_length;
  source.block_length = options.block_length;
  source.num_epochs = options.num_epochs;
  source.parse_threads = options.parse_threads;
  source.records_per_chunk = options.records_per_parse_chunk;
  source.input_errors = options.input_errors;
  source.max_bad_fraction = options.max_bad_fraction;
  source.min_records_for_fraction = options.min_records_for_fraction;
  source.log = options.log;
  ASSIGN_OR_RETURN(
      std::unique_ptr<FileExampleSource> files,
      FileExampleSource::Create(std::move(shard), std::move(format),
                                std::move(source), resume));
  const int64_t read_ahead = files->read_ahead();
  const int64_t shuffle_buffer = options.shuffle_buffer > 0
                                     ? options.shuffle_buffer
                                     : kDefaultFileShuffleBuffer;
  ASSIGN_OR_RETURN(std::unique_ptr<InputPipeline> pipeline,
                   Start(std::move(files), std::move(options), shuffle_buffer,
                         /*num_examples=*/-1, /*num_dense=*/0, read_ahead));
  return pipeline;
}

absl::StatusOr<std::unique_ptr<InputPipeline>> InputPipeline::Start(
    std::unique_ptr<ExampleSource> source, Options options,
    int64_t shuffle_buffer, int64_t num_examples, int64_t num_dense,
    int64_t read_ahead) {
  const InputPosition start = source->Position();
  std::unique_ptr<InputPipeline> pipeline(
      new InputPipeline(std::move(source), std::move(options), shuffle_buffer,
                        num_examples, num_dense, read_ahead));
  pipeline->epoch_ = start.epoch;
  pipeline->step_in_epoch_ = start.step_in_epoch;
  pipeline->examples_in_epoch_ = start.records_in_epoch;
  if (pipeline->shuffle_.has_value()) {
    pipeline->shuffle_->StartEpoch(pipeline->options_.seed, start.epoch);
  }
  if (pipeline->options_.prefetch > 0) {
    // Started once the object is complete; joined by the destructor.
    pipeline->prefetch_thread_ =
        std::thread(&InputPipeline::PrefetchLoop, pipeline.get());
  }
  return pipeline;
}

InputPipeline::InputPipeline(std::unique_ptr<ExampleSource> source,
                             Options options, int64_t shuffle_buffer,
                             int64_t num_examples, int64_t num_dense,
                             int64_t read_ahead)
    : options_(std::move(options)),
      num_examples_(num_examples),
      steps_per_epoch_(
          num_examples < 0
              ? -1
              : CeilDiv(num_examples, options_.num_replicas *
                                          options_.per_replica_batch_size)),
      read_ahead_(read_ahead),
      source_(std::move(source)),
      num_dense_(num_dense) {
  if (options_.shuffle) shuffle_.emplace(shuffle_buffer);
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_not_full_.notify_all();
  // A step being built may wait for the source's reader: stop it too.
  source_->Cancel();
  if (prefetch_thread_.joinable()) prefetch_thread_.join();
}

int64_t InputPipeline::records_read() const { return source_->records_read(); }

int64_t InputPipeline::records_skipped() const {
  return source_->records_skipped();
}

int64_t InputPipeline::read_ahead_bound() const {
  const int64_t global =
      options_.num_replicas * options_.per_replica_batch_size;
  return (options_.shuffle ? options_.shuffle_buffer > 0
                                 ? options_.shuffle_buffer
                                 : kDefaultFileShuffleBuffer
                           : 0) +
         (options_.prefetch + 1) * global + read_ahead_;
}

absl::StatusOr<InputStep> InputPipeline::Next() {
  if (options_.prefetch == 0) {
    std::lock_guard<std::mutex> lock(produce_mu_);
    return Produce();
  }
  std::unique_lock<std::mutex> lock(queue_mu_);
  queue_not_empty_.wait(lock, [this] { return !queue_.empty(); });
  if (!queue_.front().ok()) return queue_.front().status();
  InputStep step = *std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  queue_not_full_.notify_one();
  return step;
}

void InputPipeline::PrefetchLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_not_full_.wait(lock, [this] {
        return stopping_ ||
               queue_.size() < static_cast<size_t>(options_.prefetch);
      });
      if (stopping_) return;
    }
    // Built without queue_mu_, so that Next() can take the steps queued
    // before while this one is under way.
    absl::StatusOr<InputStep> step = [this] {
      std::lock_guard<std::mutex> lock(produce_mu_);
      return Produce();
    }();
    const bool is_final = !step.ok();
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      if (stopping_) return;
      queue_.push_back(std::move(step));
    }
    if (is_final) {
      // Every waiting caller gets the error; nothing follows it.
      queue_not_empty_.notify_all();
      return;
    }
    queue_not_empty_.notify_one();
  }
}

absl::StatusOr<SourceEvent> InputPipeline::NextShuffled(Example* example) {
  if (!shuffle_.has_value()) return source_->Next(example);
  // tf.data's shuffle: top the buffer up from the epoch, then draw.
  while (!source_epoch_ended_ && !shuffle_->full()) {
    Example in;
    ASSIGN_OR_RETURN(const SourceEvent event, source_->Next(&in));
    if (event == SourceEvent::kExample) {
      shuffle_->Add(std::move(in));
    } else if (event == SourceEvent::kEndOfEpoch) {
      source_epoch_ended_ = true;
    } else {
      return event;  // kEndOfInput: only ever after an epoch's end
    }
  }
  if (!shuffle_->empty()) {
    *example = shuffle_->Take();
    return SourceEvent::kExample;
  }
  // Drained at the end of the epoch (or a buffer of nothing).
  if (source_epoch_ended_) {
    source_epoch_ended_ = false;
    shuffle_->StartEpoch(options_.seed, epoch_ + 1);
    return SourceEvent::kEndOfEpoch;
  }
  return source_->Next(example);  // unreachable: a full buffer is not empty
}

void InputPipeline::EndEpoch() {
  if (options_.log) {
    options_.log(absl::StrCat("input: epoch ", epoch_ + 1, " ended after ",
                              step_in_epoch_, " steps; this pipeline gave ",
                              delivered_in_epoch_, " examples of it"));
  }
  ++epoch_;
  step_in_epoch_ = 0;
  examples_in_epoch_ = 0;
  delivered_in_epoch_ = 0;
}

absl::StatusOr<InputStep> InputPipeline::Produce() {
  if (!final_status_.ok()) return final_status_;
  const int64_t replicas = options_.num_replicas;
  const int64_t global_batch = replicas * options_.per_replica_batch_size;
  std::vector<Example> examples;
  bool epoch_ended = false;  // this step is the epoch's last, and short
  while (static_cast<int64_t>(examples.size()) < global_batch) {
    Example example;
    absl::StatusOr<SourceEvent> event = NextShuffled(&example);
    if (!event.ok()) {
      final_status_ = event.status();
      return final_status_;
    }
    if (*event == SourceEvent::kExample) {
      if (examples.empty()) examples.reserve(global_batch);
      examples.push_back(std::move(example));
      continue;
    }
    if (*event == SourceEvent::kEndOfInput) {
      final_status_ = absl::OutOfRangeError(
          absl::StrCat("end of input after ", options_.num_epochs, " epochs"));
      return final_status_;
    }
    // The end of an epoch: a short step, or the next epoch's first.
    if (!examples.empty()) {
      epoch_ended = true;
      break;
    }
    if (examples_in_epoch_ == 0 && step_in_epoch_ == 0 &&
        options_.num_epochs == 0) {
      // Nothing survived (all skipped as bad): forever would never end.
      final_status_ = absl::InvalidArgumentError(absl::StrCat(
          "epoch ", epoch_,
          " had no examples to repeat forever (num_epochs 0): ",
          source_->records_skipped(), " bad records were skipped"));
      return final_status_;
    }
    EndEpoch();
  }
  const int64_t count = static_cast<int64_t>(examples.size());
  if (count > 0 && num_dense_ == 0) {
    num_dense_ = static_cast<int64_t>(examples[0].dense.size());
  }
  InputStep step;
  step.epoch = epoch_;
  step.step_in_epoch = step_in_epoch_;
  step.replicas.reserve(replicas);
  int64_t offset = 0;
  for (int64_t r = 0; r < replicas; ++r) {
    // A full step gives everyone per_replica_batch_size; a short one hands
    // the remainder to the first replicas.
    const int64_t size = count / replicas + (r < count % replicas ? 1 : 0);
    absl::StatusOr<Batch> batch = MakeBatch(absl::MakeConstSpan(
        examples.data() + offset, static_cast<size_t>(size)));
    if (!batch.ok()) {
      final_status_ = batch.status();
      return final_status_;
    }
    // Keeps the matrix shape [0 x num_dense] consistent with the others.
    if (batch->size == 0) batch->num_dense = num_dense_;
    step.replicas.push_back(*std::move(batch));
    offset += size;
  }
  ++step_in_epoch_;
  examples_in_epoch_ += count;
  delivered_in_epoch_ += count;
  if (epoch_ended) EndEpoch();
  // Where a new pipeline continues: the source's state after what it gave
  // (the shuffle buffer's content is not part of it), numbered as this one
  // would number the next step of the source's epoch.
  step.position = source_->Position();
  step.position.step_in_epoch =
      step.position.epoch == epoch_ ? step_in_epoch_ : 0;
  return step;
}

}  // namespace distrt
