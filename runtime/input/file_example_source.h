#ifndef DISTRT_RUNTIME_INPUT_FILE_EXAMPLE_SOURCE_H_
#define DISTRT_RUNTIME_INPUT_FILE_EXAMPLE_SOURCE_H_

// FileExampleSource: the file part of a streaming InputPipeline,
//   interleave (InterleavedReader, on one read thread)
//   -> chunks of records_per_chunk records
//   -> parse on parse_threads threads (OrderedParallelMap: in order)
//   -> bad-record policy, shape checks, counters, position (on the
//      consumer's thread, in the stream's order)
//
//   read thread --Push--> [ <= 2 * parse_threads chunks in flight ] --Pop-->
//   Next()
//
// Every decision about which record comes next is taken on the read thread
// (the interleave) or in Next() (what is skipped), each single-threaded and
// in stream order; the parse threads only turn records into Examples. So
// the examples, and the errors, come out the same whatever parse_threads.
//
// Records read ahead of Next() are bounded by read_ahead() (the chunks in
// flight, the chunk being filled and the one being consumed).
//
// Threads: Next()/Position() from one thread at a time; Cancel() and the
// counters from any. The destructor cancels, then joins the read thread and
// the parse threads.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/example_source.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_error_policy.h"
#include "runtime/input/input_position.h"
#include "runtime/input/interleaved_reader.h"
#include "runtime/input/ordered_parallel_map.h"
#include "runtime/input/record_reader.h"

namespace distrt {

class FileExampleSource : public ExampleSource {
 public:
  struct Options {
    int cycle_length = 4;
    int block_length = 1;
    int64_t num_epochs = 1;
    int parse_threads = 2;
    int records_per_chunk = 64;
    InputErrorPolicy input_errors = InputErrorPolicy::kFail;
    double max_bad_fraction = 0.001;
    int64_t min_records_for_fraction = 1000;
    // Called on the consumer's thread for each damaged file and the first
    // bad records skipped; may be empty.
    std::function<void(absl::string_view)> log;
  };

  // Options are validated by the caller (InputPipeline). With `resume`,
  // FAILED_PRECONDITION when it is a position of another input, and the
  // errors of reopening its files.
  static absl::StatusOr<std::unique_ptr<FileExampleSource>> Create(
      InputShard shard, std::shared_ptr<const RecordFormat> format,
      Options options, const InputPosition* resume);

  ~FileExampleSource() override;

  absl::StatusOr<SourceEvent> Next(Example* example) override;
  InputPosition Position() const override { return consumed_; }
  void Cancel() override;
  int64_t records_read() const override { return records_read_.load(); }
  int64_t records_skipped() const override { return records_skipped_.load(); }

  // The most records (of this pipeline's; DATA sharding reads the others
  // too) read but not yet returned by Next().
  int64_t read_ahead() const;

 private:
  struct Chunk {
    std::vector<InterleaveItem> items;
    // Per item: the parsed example of a kRecord, or why it did not parse.
    std::vector<absl::StatusOr<Example>> parsed;
    // Set on the last chunk when the reading failed: after the items.
    absl::Status end;
  };

  FileExampleSource(InputShard shard,
                    std::shared_ptr<const RecordFormat> format,
                    Options options);

  void ReadLoop();
  Chunk Parse(Chunk chunk) const;
  // The policy for a record that did not parse or has the wrong shape.
  absl::Status OnBadRecord(absl::Status error);
  absl::Status CheckBadShare(bool epoch_ended);
  absl::Status Shape(const Example& example, const InterleaveItem& item);
  std::string Where(const InterleaveItem& item) const;
  void Log(absl::string_view line);

  // Constant after construction.
  const InputShard shard_;
  const std::shared_ptr<const RecordFormat> format_;
  const Options options_;
  const int max_chunks_in_flight_;

  InterleavedReader reader_;  // the read thread's, once it started
  OrderedParallelMap<Chunk, Chunk> parsed_;
  std::thread read_thread_;

  // The consumer's (Next()'s thread).
  Chunk current_;
  size_t cursor_ = 0;
  bool input_ended_ = false;
  absl::Status final_;
  InputPosition consumed_;
  // The shape every example must have: that of the first one taken.
  std::optional<size_t> num_dense_;
  size_t num_groups_ = 0;
  int64_t bad_logged_ = 0;
  absl::Status last_bad_;

  std::atomic<int64_t> records_read_{0};
  std::atomic<int64_t> records_skipped_{0};
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_FILE_EXAMPLE_SOURCE_H_
