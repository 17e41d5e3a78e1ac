#include "runtime/input/input_position.h"

#include <farmhash.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distrt {
namespace {

// "DIPn" little-endian: distrt input position.
constexpr uint32_t kMagic = 0x6e504944;
constexpr uint32_t kVersion = 1;
// A bound on slots, so that a corrupt count cannot allocate gigabytes.
constexpr uint32_t kMaxSlots = 1 << 20;

class Writer {
 public:
  void U32(uint32_t v) { Bytes(v, 4); }
  void U64(uint64_t v) { Bytes(v, 8); }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  std::string Take() { return std::move(out_); }

 private:
  void Bytes(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  bool U32(uint32_t* v) {
    uint64_t w;
    if (!Bytes(4, &w)) return false;
    *v = static_cast<uint32_t>(w);
    return true;
  }
  bool U64(uint64_t* v) { return Bytes(8, v); }
  bool I32(int32_t* v) {
    uint32_t w;
    if (!U32(&w)) return false;
    *v = static_cast<int32_t>(w);
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t w;
    if (!U64(&w)) return false;
    *v = static_cast<int64_t>(w);
    return true;
  }
  size_t left() const { return in_.size(); }

 private:
  bool Bytes(int n, uint64_t* v) {
    if (in_.size() < static_cast<size_t>(n)) return false;
    *v = 0;
    for (int i = 0; i < n; ++i) {
      *v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[i]))
            << (8 * i);
    }
    in_.remove_prefix(n);
    return true;
  }
  absl::string_view in_;
};

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("not an input position: ", what));
}

}  // namespace

bool operator==(const InputPosition::Source& a,
                const InputPosition::Source& b) {
  return a.files_fingerprint == b.files_fingerprint &&
         a.num_files == b.num_files && a.shard_index == b.shard_index &&
         a.shard_count == b.shard_count && a.by_record == b.by_record &&
         a.cycle_length == b.cycle_length && a.block_length == b.block_length;
}

std::string InputPosition::Serialize() const {
  Writer w;
  w.U32(kMagic);
  w.U32(kVersion);
  w.U64(source.files_fingerprint);
  w.I32(source.num_files);
  w.I32(source.shard_index);
  w.I32(source.shard_count);
  w.U32(source.by_record ? 1 : 0);
  w.I32(source.cycle_length);
  w.I32(source.block_length);
  w.I64(epoch);
  w.I64(step_in_epoch);
  w.I64(records_in_epoch);
  w.I32(next_file);
  w.I32(cycle_index);
  w.I64(block_index);
  w.U32(static_cast<uint32_t>(slots.size()));
  for (const Slot& slot : slots) {
    w.I32(slot.file);
    w.I64(slot.position.offset);
    w.I64(slot.position.index);
    w.I64(slot.position.line);
  }
  return w.Take();
}

absl::StatusOr<InputPosition> InputPosition::Parse(absl::string_view bytes) {
  Reader r(bytes);
  uint32_t magic = 0, version = 0;
  if (!r.U32(&magic) || magic != kMagic) return Malformed("bad magic number");
  if (!r.U32(&version)) return Malformed("truncated version");
  if (version != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("input position version ", version,
                     " is not one this build reads (", kVersion, ")"));
  }
  InputPosition p;
  uint32_t by_record = 0, num_slots = 0;
  if (!r.U64(&p.source.files_fingerprint) || !r.I32(&p.source.num_files) ||
      !r.I32(&p.source.shard_index) || !r.I32(&p.source.shard_count) ||
      !r.U32(&by_record) || !r.I32(&p.source.cycle_length) ||
      !r.I32(&p.source.block_length) || !r.I64(&p.epoch) ||
      !r.I64(&p.step_in_epoch) || !r.I64(&p.records_in_epoch) ||
      !r.I32(&p.next_file) || !r.I32(&p.cycle_index) ||
      !r.I64(&p.block_index) || !r.U32(&num_slots)) {
    return Malformed("truncated header");
  }
  if (by_record > 1) return Malformed("by_record is neither 0 nor 1");
  p.source.by_record = by_record == 1;
  if (num_slots > kMaxSlots) {
    return Malformed(absl::StrCat(num_slots, " slots"));
  }
  if (r.left() != static_cast<size_t>(num_slots) * 28) {
    return Malformed(
        absl::StrCat(r.left(), " bytes for ", num_slots, " slots of 28 bytes"));
  }
  p.slots.resize(num_slots);
  for (Slot& slot : p.slots) {
    r.I32(&slot.file);
    r.I64(&slot.position.offset);
    r.I64(&slot.position.index);
    r.I64(&slot.position.line);
  }
  return p;
}

InputPosition::Source DescribeInputSource(const InputShard& shard,
                                          int32_t cycle_length,
                                          int32_t block_length) {
  InputPosition::Source source;
  // Names joined by NUL, which no path holds, so that the list's split is
  // part of what is hashed.
  const std::string joined = absl::StrJoin(shard.files, std::string(1, '\0'));
  source.files_fingerprint = util::Fingerprint64(joined.data(), joined.size());
  source.num_files = static_cast<int32_t>(shard.files.size());
  source.shard_index = shard.index;
  source.shard_count = shard.count;
  source.by_record = shard.by_record;
  source.cycle_length = cycle_length;
  source.block_length = block_length;
  return source;
}

absl::Status CheckSameSource(const InputPosition::Source& position,
                             const InputPosition::Source& expected) {
  std::vector<std::string> differences;
  auto compare = [&](absl::string_view name, auto was, auto is) {
    if (was != is) {
      differences.push_back(
          absl::StrCat(name, " ", was, " in the position, ", is, " here"));
    }
  };
  compare("files", position.num_files, expected.num_files);
  if (position.num_files == expected.num_files &&
      position.files_fingerprint != expected.files_fingerprint) {
    differences.push_back("other file names (or order)");
  }
  compare("shard index", position.shard_index, expected.shard_index);
  compare("shard count", position.shard_count, expected.shard_count);
  compare("by_record", position.by_record, expected.by_record);
  compare("cycle_length", position.cycle_length, expected.cycle_length);
  compare("block_length", position.block_length, expected.block_length);
  if (differences.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the input position is of another input: ",
                   absl::StrJoin(differences, "; ")));
}

}  // namespace distrt
