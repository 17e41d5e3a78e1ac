#include "runtime/checkpoint/checkpoint_dir.h"

#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

constexpr absl::string_view kIndexComment =
    "# Committed checkpoints of this directory, in commit order: the last is\n"
    "# the latest. Written by the parameter servers; see "
    "docs/checkpoint_format.md.\n";

// A non-negative decimal number of digits only (no sign, no spaces).
template <typename Int>
std::optional<Int> ParseDigits(absl::string_view digits) {
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  Int value;
  if (!absl::SimpleAtoi(digits, &value)) return std::nullopt;  // overflow
  return value;
}

}  // namespace

std::string CheckpointDirName(int64_t step) {
  return absl::StrFormat("ckpt-%012d", step);
}

std::optional<int64_t> ParseCheckpointDirName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "ckpt-")) return std::nullopt;
  std::optional<int64_t> step = ParseDigits<int64_t>(name);
  // Only the canonical spelling: one name per step.
  if (!step.has_value() ||
      CheckpointDirName(*step) != absl::StrCat("ckpt-", name)) {
    return std::nullopt;
  }
  return step;
}

std::string ShardFileName(int shard_index, int num_shards) {
  return absl::StrFormat("shard-%05d-of-%05d.ckpt", shard_index, num_shards);
}

std::optional<ShardFileId> ParseShardFileName(absl::string_view name) {
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, "shard-") ||
      !absl::ConsumeSuffix(&rest, ".ckpt")) {
    return std::nullopt;
  }
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(rest, absl::MaxSplits("-of-", 1));
  std::optional<int> index = ParseDigits<int>(parts.first);
  std::optional<int> count = ParseDigits<int>(parts.second);
  if (!index.has_value() || !count.has_value() || *index >= *count ||
      ShardFileName(*index, *count) != name) {
    return std::nullopt;
  }
  return ShardFileId{*index, *count};
}

absl::StatusOr<std::vector<std::string>> ReadCheckpointIndex(
    const std::string& root_dir) {
  const std::string path = JoinPath(root_dir, kCheckpointIndexName);
  ASSIGN_OR_RETURN(bool exists, PathExists(path));
  if (!exists) return std::vector<std::string>();
  ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  std::vector<std::string> names;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    // Strict: commits delete what the index lists, so nothing but a
    // checkpoint name (no "..", no '/') may pass.
    if (!ParseCheckpointDirName(line).has_value()) {
      return absl::DataLossError(absl::StrCat(
          path, " line ", line_number, ": \"", absl::CHexEscape(line),
          "\" is not a checkpoint directory name (ckpt-<12-digit step>)"));
    }
    names.emplace_back(line);
  }
  return names;
}

absl::Status WriteCheckpointIndex(const std::string& root_dir,
                                  absl::Span<const std::string> names) {
  std::string contents(kIndexComment);
  for (const std::string& name : names) absl::StrAppend(&contents, name, "\n");
  return WriteFileAtomically(JoinPath(root_dir, kCheckpointIndexName),
                             {contents});
}

absl::Status WriteFinalCheckpointMarker(const std::string& root_dir,
                                        absl::string_view checkpoint_name) {
  if (!ParseCheckpointDirName(checkpoint_name).has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", absl::CHexEscape(checkpoint_name),
                     "\" is not a checkpoint directory name"));
  }
  return WriteFileAtomically(JoinPath(root_dir, kFinalCheckpointMarkerName),
                             {absl::StrCat(checkpoint_name, "\n")});
}

absl::StatusOr<std::optional<std::string>> ReadFinalCheckpointMarker(
    const std::string& root_dir) {
  const std::string path = JoinPath(root_dir, kFinalCheckpointMarkerName);
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  if (absl::IsNotFound(contents.status())) {
    return std::optional<std::string>();
  }
  RETURN_IF_ERROR(contents.status());
  absl::string_view name = absl::StripAsciiWhitespace(*contents);
  if (!ParseCheckpointDirName(name).has_value()) {
    return absl::DataLossError(
        absl::StrCat(path, ": \"", absl::CHexEscape(name),
                     "\" is not a checkpoint directory name"));
  }
  return std::optional<std::string>(std::string(name));
}

absl::Status RemoveFinalCheckpointMarker(const std::string& root_dir) {
  const std::string path = JoinPath(root_dir, kFinalCheckpointMarkerName);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot remove", path, errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResolveCheckpointDir(const std::string& dir) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("no checkpoint directory given");
  }
  if (absl::Status s = CheckIsDirectory(dir); !s.ok()) {
    if (s.code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(
          absl::StrCat("checkpoint directory ", dir, " does not exist"));
    }
    return s;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> entries, ListDirectory(dir));
  int checkpoint_dirs = 0;
  for (const std::string& entry : entries) {
    if (ParseShardFileName(entry).has_value()) return dir;
    if (ParseCheckpointDirName(entry).has_value()) ++checkpoint_dirs;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> index, ReadCheckpointIndex(dir));
  const std::string index_path = JoinPath(dir, kCheckpointIndexName);
  if (!index.empty()) {
    const std::string latest = JoinPath(dir, index.back());
    if (absl::Status s = CheckIsDirectory(latest); !s.ok()) {
      if (s.code() == absl::StatusCode::kNotFound) {
        return absl::NotFoundError(
            absl::StrCat("the latest checkpoint listed in ", index_path, ", ",
                         index.back(), ", does not exist"));
      }
      return s;
    }
    return latest;
  }
  if (absl::StatusOr<bool> exists = PathExists(index_path);
      exists.ok() && *exists) {
    return absl::NotFoundError(
        absl::StrCat(index_path, " lists no committed checkpoint"));
  }
  std::string message = absl::StrCat(
      dir,
      " holds no checkpoint: neither shard files (shard-*-of-*.ckpt) "
      "nor committed checkpoints (an index file \"",
      kCheckpointIndexName, "\" listing them)");
  if (checkpoint_dirs > 0) {
    absl::StrAppend(&message, "; its ", checkpoint_dirs,
                    " ckpt-* directories were never committed");
  }
  return absl::NotFoundError(message);
}

}  // namespace distrt
