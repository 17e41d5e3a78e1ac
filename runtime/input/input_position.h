#ifndef DISTRT_RUNTIME_INPUT_INPUT_POSITION_H_
#define DISTRT_RUNTIME_INPUT_INPUT_POSITION_H_

// InputPosition: a point in a file-based input pipeline's stream from which
// a new pipeline over the same input continues (InputPipeline::Create's
// `resume`), saved with a checkpoint. It holds the interleave's state
// exactly (epoch, next file to open, each open slot's file and record
// position, whose turn it is and how far into its block); what the
// pipeline held in its buffers (shuffle buffer, prefetched steps) is not
// part of it. input_pipeline.h says what that means for the examples seen.
//
// A position names the input it belongs to (InputPosition::Source): a
// pipeline refuses to resume from a position of other files, another shard
// or another interleave, saying what differs.
//
// A plain value type; Serialize/Parse write and read a small, versioned,
// little-endian binary form that does not depend on the platform.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/input_context.h"
#include "runtime/input/record_reader.h"

namespace distrt {

struct InputPosition {
  // What the position belongs to: the input and the options that fix the
  // order records are read in.
  struct Source {
    uint64_t files_fingerprint = 0;  // of the shard's file list, in order
    int32_t num_files = 0;
    int32_t shard_index = 0;
    int32_t shard_count = 1;
    bool by_record = false;
    int32_t cycle_length = 0;  // as applied: capped at the number of files
    int32_t block_length = 0;

    friend bool operator==(const Source& a, const Source& b);
  };

  // One interleave slot: the file it reads (an index into the shard's
  // files), -1 when it has none open, and where its next record starts.
  struct Slot {
    int32_t file = -1;
    RecordPosition position;
  };

  Source source;

  int64_t epoch = 0;          // 0-based; the epoch the next record is of
  int64_t step_in_epoch = 0;  // the index of the next step in that epoch
  // Records of the epoch the pipeline had taken in (its own, kept ones),
  // for progress lines; an in-memory pipeline's examples taken.
  int64_t records_in_epoch = 0;

  // The interleave (empty for an in-memory pipeline): the next file it
  // opens, whose turn it is, how many records that slot has given of its
  // current block, and cycle_length slots.
  int32_t next_file = 0;
  int32_t cycle_index = 0;
  int64_t block_index = 0;
  std::vector<Slot> slots;

  std::string Serialize() const;
  // INVALID_ARGUMENT for bytes that are not a position (naming what is
  // wrong), or for a version newer than this build reads.
  static absl::StatusOr<InputPosition> Parse(absl::string_view bytes);
};

// The Source of a pipeline over `shard` with this interleave.
InputPosition::Source DescribeInputSource(const InputShard& shard,
                                          int32_t cycle_length,
                                          int32_t block_length);

// OK when `position` was taken from a pipeline over `expected`; otherwise
// FAILED_PRECONDITION listing every field that differs ("the position was
// taken with cycle_length 4, this pipeline has 8; ...").
absl::Status CheckSameSource(const InputPosition::Source& position,
                             const InputPosition::Source& expected);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_POSITION_H_
