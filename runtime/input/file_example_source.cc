#include "runtime/input/file_example_source.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Bad records logged one by one before only the count is kept.
constexpr int64_t kBadRecordsLogged = 10;

}  // namespace

absl::StatusOr<std::unique_ptr<FileExampleSource>> FileExampleSource::Create(
    InputShard shard, std::shared_ptr<const RecordFormat> format,
    Options options, const InputPosition* resume) {
  std::unique_ptr<FileExampleSource> source(new FileExampleSource(
      std::move(shard), std::move(format), std::move(options)));
  InputPosition& start = source->consumed_;
  start.source =
      DescribeInputSource(source->shard_, source->reader_.cycle_length(),
                          source->options_.block_length);
  start.slots.resize(source->reader_.cycle_length());
  if (resume != nullptr) {
    RETURN_IF_ERROR(CheckSameSource(resume->source, start.source));
    RETURN_IF_ERROR(source->reader_.Restore(*resume));
    start = *resume;
  }
  // Started once the object is complete; joined by the destructor.
  source->read_thread_ =
      std::thread(&FileExampleSource::ReadLoop, source.get());
  return source;
}

FileExampleSource::FileExampleSource(InputShard shard,
                                     std::shared_ptr<const RecordFormat> format,
                                     Options options)
    : shard_(std::move(shard)),
      format_(std::move(format)),
      options_(std::move(options)),
      max_chunks_in_flight_(2 * options_.parse_threads),
      reader_(
          &shard_, format_.get(),
          {options_.cycle_length, options_.block_length, options_.num_epochs,
           options_.input_errors == InputErrorPolicy::kSkip}),
      parsed_(options_.parse_threads, max_chunks_in_flight_,
              [this](Chunk chunk) { return Parse(std::move(chunk)); }) {}

FileExampleSource::~FileExampleSource() {
  Cancel();
  if (read_thread_.joinable()) read_thread_.join();
  // parsed_'s destructor joins the parse threads.
}

void FileExampleSource::Cancel() { parsed_.Cancel(); }

int64_t FileExampleSource::read_ahead() const {
  // In flight, the read thread's chunk, the consumer's.
  return (max_chunks_in_flight_ + 2) * int64_t{options_.records_per_chunk};
}

void FileExampleSource::ReadLoop() {
  Chunk chunk;
  while (true) {
    chunk.items.emplace_back();
    const absl::Status status = reader_.Next(&chunk.items.back());
    bool last = false;
    if (!status.ok()) {
      chunk.items.pop_back();
      chunk.end = status;
      last = true;
    } else {
      last = chunk.items.back().kind == InterleaveItem::Kind::kEndOfInput;
    }
    if (last ||
        chunk.items.size() >= static_cast<size_t>(options_.records_per_chunk)) {
      if (!parsed_.Push(std::move(chunk))) return;  // cancelled
      chunk = Chunk();
      if (last) {
        parsed_.Close();
        return;
      }
    }
  }
}

FileExampleSource::Chunk FileExampleSource::Parse(Chunk chunk) const {
  chunk.parsed.reserve(chunk.items.size());
  RecordLocation where;  // reused: the path is copied once per file change
  int32_t where_file = -1;
  for (InterleaveItem& item : chunk.items) {
    if (item.kind != InterleaveItem::Kind::kRecord) {
      chunk.parsed.emplace_back(Example());
      continue;
    }
    if (item.file != where_file) {
      where.path = shard_.files[item.file];
      where_file = item.file;
    }
    where.position = item.position;
    absl::StatusOr<Example> example = item.parser->Parse(item.record, where);
    if (example.ok()) {
      example->file = item.file;
      if (example->line == 0) {
        example->line = item.position.line > 0 ? item.position.line
                                               : item.position.index + 1;
      }
    }
    chunk.parsed.push_back(std::move(example));
    // The record's bytes are no longer needed; the parser is.
    std::string().swap(item.record);
  }
  return chunk;
}

std::string FileExampleSource::Where(const InterleaveItem& item) const {
  return RecordLocation{shard_.files[item.file], item.position}.ToString();
}

void FileExampleSource::Log(absl::string_view line) {
  if (options_.log) options_.log(line);
}

absl::Status FileExampleSource::Shape(const Example& example,
                                      const InterleaveItem& item) {
  if (example.ids.size() != example.values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(item), ": ", example.ids.size(), " sparse ids but ",
                     example.values.size(), " values"));
  }
  if (!num_dense_.has_value()) {
    num_dense_ = example.dense.size();
    num_groups_ = example.groups.size();
    return absl::OkStatus();
  }
  if (example.dense.size() != *num_dense_) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(item), ": ", example.dense.size(),
        " dense features where the first example had ", *num_dense_));
  }
  if (example.groups.size() != num_groups_) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(item), ": ", example.groups.size(),
        " embedding groups where the first example had ", num_groups_));
  }
  return absl::OkStatus();
}

absl::Status FileExampleSource::OnBadRecord(absl::Status error) {
  if (options_.input_errors == InputErrorPolicy::kFail) return error;
  ++records_skipped_;
  if (bad_logged_ < kBadRecordsLogged) {
    ++bad_logged_;
    Log(absl::StrCat("skipping a bad record: ", error.message(),
                     bad_logged_ == kBadRecordsLogged
                         ? " (further bad records are counted, not logged)"
                         : ""));
  }
  last_bad_ = std::move(error);
  return CheckBadShare(/*epoch_ended=*/false);
}

absl::Status FileExampleSource::CheckBadShare(bool epoch_ended) {
  const int64_t skipped = records_skipped_.load();
  const int64_t read = records_read_.load();
  if (skipped == 0) return absl::OkStatus();
  // Judged once the share means something: after enough records, or over a
  // whole epoch of a small input.
  if (read < options_.min_records_for_fraction && !epoch_ended) {
    return absl::OkStatus();
  }
  if (static_cast<double>(skipped) <=
      options_.max_bad_fraction * static_cast<double>(read)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("skipped %d bad records of %d read (%.3g%%), more than "
                      "max_bad_fraction %.3g%%; the last: %s",
                      skipped, read, 100.0 * skipped / read,
                      100.0 * options_.max_bad_fraction, last_bad_.message()));
}

absl::StatusOr<SourceEvent> FileExampleSource::Next(Example* example) {
  if (!final_.ok()) return final_;
  while (true) {
    if (input_ended_) return SourceEvent::kEndOfInput;
    if (cursor_ == current_.items.size()) {
      if (!current_.end.ok()) {
        final_ = current_.end;
        return final_;
      }
      std::optional<Chunk> next = parsed_.Pop();
      if (!next.has_value()) {
        final_ = absl::CancelledError("the input pipeline is shutting down");
        return final_;
      }
      current_ = *std::move(next);
      cursor_ = 0;
      continue;
    }
    const size_t i = cursor_++;
    const InterleaveItem& item = current_.items[i];
    item.delta.ApplyTo(consumed_);
    absl::Status bad;
    switch (item.kind) {
      case InterleaveItem::Kind::kRecord: {
        ++consumed_.records_in_epoch;
        if (++records_read_ == options_.min_records_for_fraction) {
          // Bad records seen before are judged now, not at the next one.
          final_ = CheckBadShare(/*epoch_ended=*/false);
          if (!final_.ok()) return final_;
        }
        absl::StatusOr<Example>& parsed = current_.parsed[i];
        if (!parsed.ok()) {
          bad = parsed.status();
          break;
        }
        bad = Shape(*parsed, item);
        if (!bad.ok()) break;
        *example = *std::move(parsed);
        return SourceEvent::kExample;
      }
      case InterleaveItem::Kind::kDamagedFile:
        // Counts as one record read and skipped: how many the rest of the
        // file held is unknown.
        ++records_read_;
        Log(absl::StrCat("skipping the rest of a damaged file: ",
                         item.damage.message()));
        bad = item.damage;
        break;
      case InterleaveItem::Kind::kEndOfEpoch:
        consumed_.records_in_epoch = 0;
        final_ = CheckBadShare(/*epoch_ended=*/true);
        if (!final_.ok()) return final_;
        return SourceEvent::kEndOfEpoch;
      case InterleaveItem::Kind::kEndOfInput:
        input_ended_ = true;
        return SourceEvent::kEndOfInput;
    }
    if (item.kind == InterleaveItem::Kind::kDamagedFile) {
      // The read thread only makes these under kSkip.
      ++records_skipped_;
      last_bad_ = bad;
      final_ = CheckBadShare(false);
    } else {
      final_ = OnBadRecord(std::move(bad));
    }
    if (!final_.ok()) return final_;
  }
}

}  // namespace distrt
