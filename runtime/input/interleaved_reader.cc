#include "runtime/input/interleaved_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {

void InterleaveDelta::ApplyTo(InputPosition& position) const {
  if (reset) {
    for (InputPosition::Slot& s : position.slots) s = InputPosition::Slot();
  }
  for (const auto& [index, s] : others) position.slots[index] = s;
  if (slot >= 0) position.slots[slot] = state;
  position.epoch = epoch;
  position.next_file = next_file;
  position.cycle_index = cycle_index;
  position.block_index = block_index;
}

InterleavedReader::InterleavedReader(const InputShard* shard,
                                     const RecordFormat* format,
                                     Options options)
    : shard_(*shard), format_(*format), options_(options) {
  const int files = static_cast<int>(shard_.files.size());
  slots_.resize(std::max(1, std::min(options_.cycle_length, files)));
}

absl::Status InterleavedReader::Restore(const InputPosition& position) {
  const int32_t files = static_cast<int32_t>(shard_.files.size());
  auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("the input position does not fit the input: ", what));
  };
  if (position.slots.size() != slots_.size()) {
    return bad(
        absl::StrCat(position.slots.size(), " slots, not ", slots_.size()));
  }
  if (position.epoch < 0 || position.next_file < 0 ||
      position.next_file > files || position.cycle_index < 0 ||
      position.cycle_index >= cycle_length() || position.block_index < 0 ||
      position.block_index >= options_.block_length) {
    return bad(absl::StrCat("epoch ", position.epoch, ", next file ",
                            position.next_file, ", cycle index ",
                            position.cycle_index, ", block index ",
                            position.block_index));
  }
  epoch_ = position.epoch;
  next_file_ = position.next_file;
  cycle_index_ = position.cycle_index;
  block_index_ = position.block_index;
  records_this_epoch_ = position.records_in_epoch;
  ended_ = options_.num_epochs > 0 && epoch_ >= options_.num_epochs;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const InputPosition::Slot& s = position.slots[i];
    if (s.file < -1 || s.file >= files) {
      return bad(
          absl::StrCat("slot ", i, " reads file ", s.file, " of ", files));
    }
    if (s.file < 0 || ended_) continue;
    ASSIGN_OR_RETURN(slots_[i].reader,
                     format_.Open(shard_.files[s.file], s.position));
    slots_[i].file = s.file;
    ++num_open_;
  }
  return absl::OkStatus();
}

void InterleavedReader::Close(int32_t slot) {
  slots_[slot].reader.reset();
  slots_[slot].file = -1;
  --num_open_;
  pending_.push_back({slot, InputPosition::Slot()});
}

void InterleavedReader::PassTurn() {
  cycle_index_ = (cycle_index_ + 1) % cycle_length();
  block_index_ = 0;
}

void InterleavedReader::FillDelta(InterleaveDelta& delta) {
  delta.reset = pending_reset_;
  pending_reset_ = false;
  delta.others = std::move(pending_);
  pending_.clear();
  delta.epoch = epoch_;
  delta.next_file = next_file_;
  delta.cycle_index = cycle_index_;
  delta.block_index = block_index_;
}

absl::Status InterleavedReader::Next(InterleaveItem* item) {
  item->delta.slot = -1;
  while (true) {
    if (ended_) {
      item->kind = InterleaveItem::Kind::kEndOfInput;
      FillDelta(item->delta);
      return absl::OkStatus();
    }
    const int32_t turn = cycle_index_;
    Slot& slot = slots_[turn];
    if (slot.reader != nullptr) {
      const RecordPosition at = slot.reader->position();
      absl::StatusOr<bool> more = slot.reader->Next(&item->record);
      if (!more.ok()) {
        if (!options_.skip_damaged_files || !absl::IsDataLoss(more.status())) {
          return more.status();
        }
        item->kind = InterleaveItem::Kind::kDamagedFile;
        item->file = slot.file;
        item->position = at;
        item->damage = more.status();
        Close(turn);
        PassTurn();
        FillDelta(item->delta);
        return absl::OkStatus();
      }
      if (!*more) {  // tf.data: the slot empties and the turn passes on
        Close(turn);
        PassTurn();
        continue;
      }
      if (!shard_.Keeps(at.index)) continue;  // another pipeline's
      item->kind = InterleaveItem::Kind::kRecord;
      item->file = slot.file;
      item->position = at;
      item->parser = slot.reader->parser();
      item->delta.slot = turn;
      item->delta.state = {slot.file, slot.reader->position()};
      ++records_this_epoch_;
      if (++block_index_ == options_.block_length) PassTurn();
      FillDelta(item->delta);
      return absl::OkStatus();
    }
    if (next_file_ < static_cast<int32_t>(shard_.files.size())) {
      ASSIGN_OR_RETURN(slot.reader, format_.Open(shard_.files[next_file_], {}));
      slot.file = next_file_++;
      ++num_open_;
      pending_.push_back({turn, {slot.file, RecordPosition()}});
      continue;
    }
    if (num_open_ > 0) {
      PassTurn();
      continue;
    }
    // Every file of the epoch was read.
    if (records_this_epoch_ == 0 && options_.num_epochs == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the input has no records to repeat forever (num_epochs 0): ",
          shard_.files.size(), " files",
          shard_.by_record ? absl::StrCat(", keeping records ", shard_.index,
                                          " mod ", shard_.count)
                           : ""));
    }
    ++epoch_;
    next_file_ = 0;
    cycle_index_ = 0;
    block_index_ = 0;
    records_this_epoch_ = 0;
    pending_.clear();
    pending_reset_ = true;
    ended_ = options_.num_epochs > 0 && epoch_ >= options_.num_epochs;
    item->kind = InterleaveItem::Kind::kEndOfEpoch;
    FillDelta(item->delta);
    return absl::OkStatus();
  }
}

}  // namespace distrt
