#ifndef DISTRT_RUNTIME_INPUT_INTERLEAVED_READER_H_
#define DISTRT_RUNTIME_INPUT_INTERLEAVED_READER_H_

// InterleavedReader: tf.data's
//   files.interleave(read, cycle_length, block_length).repeat(num_epochs)
// over one pipeline's shard, producing raw records (not parsed) with where
// each one is. It mirrors tf.data's InterleaveDataset:
//
//   slots 0..cycle_length-1, all empty at the start of an epoch; the slot
//   whose turn it is (cycle_index):
//     has a file open -> its next record (one of block_length in a row),
//                        or, at the end of the file, the slot empties and
//                        the turn passes on;
//     is empty        -> opens the next file of the shard, if any is left,
//                        and reads from it; else the turn passes on;
//   when every slot is empty and no file is left, the epoch ends.
//
// With DATA sharding (InputShard::by_record) only the records whose index
// in their file is this pipeline's are produced; the others are read and
// dropped and do not count toward a block.
//
// Each item says how the interleave's state changed (InterleaveDelta), so
// that a consumer further down the pipeline, which takes the items later
// and on another thread, knows the exact state after the last item it
// took: that is InputPosition, from which Restore() continues.
//
// Single-threaded; FileExampleSource runs it on its read thread.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_position.h"
#include "runtime/input/record_reader.h"

namespace distrt {

// The state change up to and including one item.
struct InterleaveDelta {
  bool reset = false;  // an epoch began: every slot empty
  // Slots that changed without an item of their own (files opened, or
  // ended), oldest first; usually none.
  std::vector<std::pair<int32_t, InputPosition::Slot>> others;
  // The slot the item came from and its state after it; -1 for none.
  int32_t slot = -1;
  InputPosition::Slot state;
  // The interleave after the item.
  int64_t epoch = 0;
  int32_t next_file = 0;
  int32_t cycle_index = 0;
  int64_t block_index = 0;

  void ApplyTo(InputPosition& position) const;
};

struct InterleaveItem {
  enum class Kind {
    kRecord,       // record/file/position/parser
    kDamagedFile,  // file/damage: the rest of the file was skipped
    kEndOfEpoch,
    kEndOfInput,  // after the last epoch's kEndOfEpoch
  };
  Kind kind = Kind::kRecord;
  std::string record;
  int32_t file = -1;        // index in the shard's files
  RecordPosition position;  // where the record starts
  std::shared_ptr<const RecordParser> parser;
  absl::Status damage;  // the reader's DATA_LOSS
  InterleaveDelta delta;
};

class InterleavedReader {
 public:
  struct Options {
    int cycle_length = 4;    // >= 1, capped at the number of files
    int block_length = 1;    // >= 1
    int64_t num_epochs = 1;  // 0: forever
    // DATA_LOSS from a reader becomes a kDamagedFile item (and the file's
    // rest is skipped) instead of an error.
    bool skip_damaged_files = false;
  };

  // `shard` and `format` must outlive the reader.
  InterleavedReader(const InputShard* shard, const RecordFormat* format,
                    Options options);

  // The cycle length applied: min(cycle_length, files), at least 1.
  int32_t cycle_length() const { return static_cast<int32_t>(slots_.size()); }

  // Continues from `position` (of a consumer of this reader's items; its
  // Source already checked): reopens its slots' files where they were.
  // INVALID_ARGUMENT for a position that does not fit the shard, or the
  // error opening a file.
  absl::Status Restore(const InputPosition& position);

  // The next item into *item. An error (a file that cannot be opened or
  // read; DATA_LOSS unless skipped; INVALID_ARGUMENT when repeating forever
  // an input that has no records) ends the reading.
  absl::Status Next(InterleaveItem* item);

 private:
  struct Slot {
    int32_t file = -1;
    std::unique_ptr<RecordReader> reader;
  };

  void Close(int32_t slot);
  void PassTurn();
  void FillDelta(InterleaveDelta& delta);

  const InputShard& shard_;
  const RecordFormat& format_;
  const Options options_;

  std::vector<Slot> slots_;
  int64_t epoch_ = 0;
  int32_t next_file_ = 0;
  int32_t cycle_index_ = 0;
  int64_t block_index_ = 0;
  int32_t num_open_ = 0;
  int64_t records_this_epoch_ = 0;
  bool ended_ = false;
  // State changes not yet handed out with an item.
  bool pending_reset_ = false;
  std::vector<std::pair<int32_t, InputPosition::Slot>> pending_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INTERLEAVED_READER_H_
