#ifndef DISTRT_RUNTIME_INPUT_EXAMPLE_SOURCE_H_
#define DISTRT_RUNTIME_INPUT_EXAMPLE_SOURCE_H_

// ExampleSource: where an InputPipeline's examples come from, epoch after
// epoch (tf.data's source and repeat together): examples held in memory,
// or records read from files and parsed (FileExampleSource). The pipeline's
// shuffle, batch and prefetch stages are the same over every source.
//
// Not thread-safe, except Cancel().

#include <cstdint>

#include "absl/status/statusor.h"
#include "runtime/input/example.h"
#include "runtime/input/input_position.h"

namespace distrt {

enum class SourceEvent {
  kExample,     // *example was set
  kEndOfEpoch,  // the epoch ended; the next call starts the next one
  kEndOfInput,  // every epoch ended; so will every later call
};

class ExampleSource {
 public:
  virtual ~ExampleSource() = default;

  // The next example or event. An error ends the source: the pipeline
  // returns it and calls no more.
  virtual absl::StatusOr<SourceEvent> Next(Example* example) = 0;

  // Where the source is: after the last event Next() returned.
  // step_in_epoch is left for the pipeline to fill.
  virtual InputPosition Position() const = 0;

  // Makes a Next() that waits (for a reader thread) return CANCELLED
  // promptly, now and later. Any thread.
  virtual void Cancel() {}

  // Records taken in and dropped as bad so far (see InputPipeline). Any
  // thread.
  virtual int64_t records_read() const = 0;
  virtual int64_t records_skipped() const = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_EXAMPLE_SOURCE_H_
