#include "runtime/input/input_pipeline.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/util/splitmix64.h"

namespace distrt {
namespace {

// Uniform in [0, bound), bound >= 1. Not std::uniform_int_distribution:
// its algorithm differs between standard libraries, and the order of an
// epoch must not depend on which one a worker was built with. mt19937_64's
// output is fixed by the standard; rejecting the lowest 2^64 mod bound
// values leaves a range that is a multiple of bound, so the modulo is
// unbiased.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
  while (true) {
    const uint64_t r = rng();
    if (r >= reject_below) return r % bound;
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t InputStep::num_examples() const {
  int64_t total = 0;
  for (const Batch& batch : replicas) total += batch.size;
  return total;
}

absl::StatusOr<std::unique_ptr<InputPipeline>> InputPipeline::Create(
    std::vector<Example> examples, Options options) {
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
  if (examples.empty() && options.num_epochs == 0) {
    return absl::InvalidArgumentError(
        "no examples to repeat forever (num_epochs 0): Next() would never "
        "return a step");
  }
  // What MakeBatch would reject, found before training starts and named by
  // the example's place in the input rather than in some shuffled batch.
  const int64_t num_dense =
      examples.empty() ? 0 : static_cast<int64_t>(examples[0].dense.size());
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
  }
  std::unique_ptr<InputPipeline> pipeline(
      new InputPipeline(std::move(examples), options, num_dense));
  if (options.prefetch > 0) {
    // Started once the object is complete; joined by the destructor.
    pipeline->prefetch_thread_ =
        std::thread(&InputPipeline::PrefetchLoop, pipeline.get());
  }
  return pipeline;
}

InputPipeline::InputPipeline(std::vector<Example> examples, Options options,
                             int64_t num_dense)
    : options_(options),
      num_examples_(static_cast<int64_t>(examples.size())),
      num_dense_(num_dense),
      steps_per_epoch_(
          CeilDiv(num_examples_,
                  options.num_replicas * options.per_replica_batch_size)),
      examples_(std::move(examples)),
      arrangement_(examples_.size()) {
  std::iota(arrangement_.begin(), arrangement_.end(), int64_t{0});
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_not_full_.notify_all();
  if (prefetch_thread_.joinable()) prefetch_thread_.join();
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

absl::StatusOr<InputStep> InputPipeline::Produce() {
  if (!final_status_.ok()) return final_status_;
  if (steps_per_epoch_ == 0 ||
      (options_.num_epochs > 0 && epoch_ >= options_.num_epochs)) {
    final_status_ = absl::OutOfRangeError(
        absl::StrCat("end of input after ", options_.num_epochs, " epochs"));
    return final_status_;
  }
  if (step_in_epoch_ == 0) ArrangeEpoch();

  const int64_t replicas = options_.num_replicas;
  const int64_t global_batch = replicas * options_.per_replica_batch_size;
  int64_t offset = step_in_epoch_ * global_batch;
  const int64_t count = std::min(global_batch, num_examples_ - offset);
  InputStep step;
  step.epoch = epoch_;
  step.step_in_epoch = step_in_epoch_;
  step.replicas.reserve(replicas);
  for (int64_t r = 0; r < replicas; ++r) {
    // A full step gives everyone per_replica_batch_size; a short one hands
    // the remainder to the first replicas.
    const int64_t size = count / replicas + (r < count % replicas ? 1 : 0);
    absl::StatusOr<Batch> batch = MakeBatch(absl::MakeConstSpan(
        examples_.data() + offset, static_cast<size_t>(size)));
    if (!batch.ok()) {
      final_status_ = batch.status();
      return final_status_;
    }
    // Keeps the matrix shape [0 x num_dense] consistent with the others.
    if (batch->size == 0) batch->num_dense = num_dense_;
    step.replicas.push_back(*std::move(batch));
    offset += size;
  }
  if (++step_in_epoch_ == steps_per_epoch_) {
    step_in_epoch_ = 0;
    ++epoch_;
  }
  return step;
}

void InputPipeline::ArrangeEpoch() {
  if (!options_.shuffle) return;  // every epoch in the order given
  // Fisher-Yates over the indices of the input order, so that the epoch's
  // order depends on (seed, epoch) alone and not on earlier epochs.
  const size_t n = examples_.size();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 rng(
      SplitMix64(options_.seed ^ SplitMix64(static_cast<uint64_t>(epoch_))));
  for (size_t i = n; i > 1; --i) {
    std::swap(order[i - 1], order[UniformBelow(rng, i)]);
  }
  // Move (not copy) the examples from the previous epoch's arrangement into
  // this one's, so that each step's batches are contiguous slices.
  std::vector<size_t> position(n);
  for (size_t i = 0; i < n; ++i) position[arrangement_[i]] = i;
  std::vector<Example> arranged;
  arranged.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    arranged.push_back(std::move(examples_[position[order[i]]]));
  }
  examples_ = std::move(arranged);
  arrangement_ = std::move(order);
}

}  // namespace distrt
