#include "runtime/input/input_files.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/input/feature_parser.h"
#include "runtime/input/text_record_format.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The names in directory `path` that do not start with '.', as paths.
absl::StatusOr<std::vector<std::string>> ListVisibleEntries(
    const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("cannot list directory ", path));
  }
  std::vector<std::string> paths;
  const absl::string_view separator =
      !path.empty() && path.back() == '/' ? "" : "/";
  while (true) {
    errno = 0;
    const struct dirent* entry = readdir(dir);
    if (entry == nullptr) break;
    if (entry->d_name[0] == '.') continue;
    paths.push_back(absl::StrCat(path, separator, entry->d_name));
  }
  const int read_errno = errno;
  closedir(dir);
  if (read_errno != 0) {
    return absl::ErrnoToStatus(read_errno,
                               absl::StrCat("cannot list directory ", path));
  }
  return paths;
}

// Explains why `pattern` matched nothing: glob(3) reports an unreadable
// directory on the way as no match, which would hide e.g. a permission
// problem behind "no files match".
absl::Status NoMatchError(const std::string& pattern) {
  // The part before the first component with a wildcard is literal.
  const size_t wildcard = pattern.find_first_of("*?[");
  std::string literal = pattern;
  if (wildcard != std::string::npos) {
    const size_t slash = pattern.rfind('/', wildcard);
    literal = slash == std::string::npos ? "." : pattern.substr(0, slash + 1);
  }
  struct stat st;
  if (stat(literal.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      return absl::ErrnoToStatus(
          errno, absl::StrCat("cannot read ", literal, " (matching input \"",
                              pattern, "\")"));
    }
  } else if (wildcard != std::string::npos && S_ISDIR(st.st_mode)) {
    RETURN_IF_ERROR(ListVisibleEntries(literal).status());
  }
  if (wildcard == std::string::npos) {
    return absl::NotFoundError(
        absl::StrCat("input \"", pattern, "\" does not exist"));
  }
  return absl::NotFoundError(
      absl::StrCat("no input files match \"", pattern, "\""));
}

absl::StatusOr<std::vector<std::string>> Glob(const std::string& pattern) {
  glob_t matches;
  const int result = glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> paths;
  if (result == 0) {
    paths.assign(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
  }
  globfree(&matches);
  switch (result) {
    case 0:
      return paths;
    case GLOB_NOMATCH:
      return NoMatchError(pattern);
    case GLOB_NOSPACE:
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory matching input \"", pattern, "\""));
    default:
      return absl::InternalError(
          absl::StrCat("glob(\"", pattern, "\") failed with ", result));
  }
}

// The files `entry` (one item of ExpandInputFiles' list) names.
absl::StatusOr<std::vector<std::string>> ExpandEntry(const std::string& entry) {
  ASSIGN_OR_RETURN(std::vector<std::string> matches, Glob(entry));
  std::vector<std::string> files;
  for (std::string& match : matches) {
    if (!IsDirectory(match)) {
      // Whatever it is, the reader opening it reports what is wrong.
      files.push_back(std::move(match));
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<std::string> children,
                     ListVisibleEntries(match));
    for (std::string& child : children) {
      if (!IsDirectory(child)) files.push_back(std::move(child));
    }
  }
  if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no input files in \"", entry,
                     "\" (subdirectories and hidden files are not read)"));
  }
  return files;
}

}  // namespace

absl::StatusOr<InputFormat> ParseInputFormat(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "libsvm" || lower == "svm") return InputFormat::kLibsvm;
  if (lower == "csv") return InputFormat::kCsv;
  if (lower == "tfrecord") return InputFormat::kTfRecord;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown input format \"", name,
                   "\"; expected one of: libsvm, svm, csv, tfrecord"));
}

InputFormat InputFormatForPath(absl::string_view path) {
  absl::string_view name = path;
  if (!absl::ConsumeSuffix(&name, ".gz")) absl::ConsumeSuffix(&name, ".gzip");
  if (absl::EndsWith(path, ".csv")) return InputFormat::kCsv;
  for (absl::string_view suffix : {".tfrecord", ".tfrecords", ".tfrec"}) {
    if (absl::EndsWith(name, suffix)) return InputFormat::kTfRecord;
  }
  return InputFormat::kLibsvm;
}

absl::StatusOr<std::shared_ptr<const RecordFormat>> MakeRecordFormat(
    const InputFormatOptions& options) {
  std::shared_ptr<const FeatureParser> features;
  if (options.features != nullptr) {
    ASSIGN_OR_RETURN(features, FeatureParser::Create(*options.features));
  }
  switch (options.format) {
    case InputFormat::kLibsvm: {
      if (features != nullptr) {
        return absl::InvalidArgumentError(
            "a feature spec names features, which LIBSVM data does not have "
            "(give TFRecord, or CSV with a header)");
      }
      ASSIGN_OR_RETURN(std::unique_ptr<LibsvmFormat> format,
                       LibsvmFormat::Create(options.libsvm));
      return std::shared_ptr<const RecordFormat>(std::move(format));
    }
    case InputFormat::kCsv: {
      NamedCsvParserFactory named;
      if (features != nullptr) {
        if (!options.csv.has_header) {
          return absl::InvalidArgumentError(
              "a feature spec maps CSV columns by name: the files need a "
              "header line");
        }
        const char delimiter = options.csv.delimiter;
        named = [features, delimiter](const std::vector<std::string>& header,
                                      const std::string& path) {
          return MakeNamedCsvRecordParser(features, header, delimiter, path);
        };
      }
      ASSIGN_OR_RETURN(std::unique_ptr<CsvFormat> format,
                       CsvFormat::Create(options.csv, std::move(named)));
      return std::shared_ptr<const RecordFormat>(std::move(format));
    }
    case InputFormat::kTfRecord:
      if (features == nullptr) {
        return absl::InvalidArgumentError(
            "TFRecord data needs a feature spec (--features): which "
            "features of its tf.Examples are the label, numeric and "
            "categorical");
      }
      return std::shared_ptr<const RecordFormat>(
          std::make_shared<TfRecordFormat>(
              options.compression, MakeTfExampleRecordParser(features)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown input format ", static_cast<int>(options.format)));
}

absl::Status ForEachExample(const std::string& path, const RecordFormat& format,
                            const std::function<absl::Status(Example&)>& fn) {
  ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader,
                   format.Open(path, RecordPosition{}));
  const std::shared_ptr<const RecordParser> parser = reader->parser();
  RecordLocation where;
  where.path = path;
  std::string record;
  while (true) {
    where.position = reader->position();
    ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) return absl::OkStatus();
    ASSIGN_OR_RETURN(Example example, parser->Parse(record, where));
    RETURN_IF_ERROR(fn(example));
  }
}

absl::string_view InputFormatName(InputFormat format) {
  switch (format) {
    case InputFormat::kLibsvm:
      return "libsvm";
    case InputFormat::kCsv:
      return "csv";
    case InputFormat::kTfRecord:
      return "tfrecord";
  }
  return "unknown";
}

absl::StatusOr<std::vector<Example>> ReadInputFile(
    const std::string& path, const InputFormatOptions& options) {
  switch (options.format) {
    case InputFormat::kLibsvm:
      return ParseLibsvmFile(path, options.libsvm);
    case InputFormat::kCsv:
      if (options.features == nullptr) return ParseCsvFile(path, options.csv);
      break;
    case InputFormat::kTfRecord:
      break;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const RecordFormat> format,
                   MakeRecordFormat(options));
  std::vector<Example> examples;
  RETURN_IF_ERROR(ForEachExample(path, *format, [&](Example& example) {
    examples.push_back(std::move(example));
    return absl::OkStatus();
  }));
  return examples;
}

absl::StatusOr<std::vector<Example>> ReadInputShard(
    const InputShard& shard, const InputFormatOptions& options) {
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input shard ", shard.index, " of ", shard.count, " is not a shard"));
  }
  std::vector<Example> kept;
  for (size_t file = 0; file < shard.files.size(); ++file) {
    ASSIGN_OR_RETURN(std::vector<Example> examples,
                     ReadInputFile(shard.files[file], options));
    for (Example& example : examples) {
      example.file = static_cast<int32_t>(file);
    }
    if (!shard.by_record) {
      if (kept.empty()) {
        kept = std::move(examples);
      } else {
        kept.insert(kept.end(), std::make_move_iterator(examples.begin()),
                    std::make_move_iterator(examples.end()));
      }
      continue;
    }
    for (size_t i = 0; i < examples.size(); ++i) {
      if (shard.Keeps(static_cast<int64_t>(i))) {
        kept.push_back(std::move((examples)[i]));
      }
    }
  }
  return kept;
}

absl::StatusOr<std::vector<std::string>> ExpandInputFiles(
    absl::string_view spec) {
  std::vector<std::string> files;
  bool any_entry = false;
  for (absl::string_view entry : absl::StrSplit(spec, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) continue;
    any_entry = true;
    ASSIGN_OR_RETURN(std::vector<std::string> expanded,
                     ExpandEntry(std::string(entry)));
    files.insert(files.end(), std::make_move_iterator(expanded.begin()),
                 std::make_move_iterator(expanded.end()));
  }
  if (!any_entry) {
    return absl::InvalidArgumentError(
        absl::StrCat("no input files given (\"", spec, "\")"));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace distrt
