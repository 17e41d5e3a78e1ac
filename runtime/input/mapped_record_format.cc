#include "runtime/input/mapped_record_format.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

class MappedParser final : public RecordParser {
 public:
  MappedParser(std::shared_ptr<const RecordParser> parser,
               std::shared_ptr<const ExampleMap> map)
      : parser_(std::move(parser)), map_(std::move(map)) {}

  absl::StatusOr<Example> Parse(absl::string_view record,
                                const RecordLocation& where) const override {
    ASSIGN_OR_RETURN(Example example, parser_->Parse(record, where));
    if (absl::Status s = (*map_)(example); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat(where.ToString(), ": ", s.message()));
    }
    return example;
  }

 private:
  const std::shared_ptr<const RecordParser> parser_;
  const std::shared_ptr<const ExampleMap> map_;
};

class MappedReader final : public RecordReader {
 public:
  MappedReader(std::unique_ptr<RecordReader> reader,
               std::shared_ptr<const ExampleMap> map)
      : reader_(std::move(reader)),
        parser_(std::make_shared<MappedParser>(reader_->parser(),
                                               std::move(map))) {}

  absl::StatusOr<bool> Next(std::string* record) override {
    return reader_->Next(record);
  }
  RecordPosition position() const override { return reader_->position(); }
  const std::string& path() const override { return reader_->path(); }
  std::shared_ptr<const RecordParser> parser() const override {
    return parser_;
  }

 private:
  const std::unique_ptr<RecordReader> reader_;
  const std::shared_ptr<const RecordParser> parser_;
};

class MappedFormat final : public RecordFormat {
 public:
  MappedFormat(std::shared_ptr<const RecordFormat> format, ExampleMap map)
      : format_(std::move(format)),
        map_(std::make_shared<const ExampleMap>(std::move(map))) {}

  absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordPosition& start) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader,
                     format_->Open(path, start));
    return std::make_unique<MappedReader>(std::move(reader), map_);
  }
  std::string name() const override { return format_->name(); }

 private:
  const std::shared_ptr<const RecordFormat> format_;
  const std::shared_ptr<const ExampleMap> map_;
};

}  // namespace

std::shared_ptr<const RecordFormat> MapRecords(
    std::shared_ptr<const RecordFormat> format, ExampleMap map) {
  return std::make_shared<MappedFormat>(std::move(format), std::move(map));
}

}  // namespace distrt
