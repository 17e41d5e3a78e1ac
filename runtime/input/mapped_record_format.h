#ifndef DISTRT_RUNTIME_INPUT_MAPPED_RECORD_FORMAT_H_
#define DISTRT_RUNTIME_INPUT_MAPPED_RECORD_FORMAT_H_

// MapRecords: a RecordFormat whose examples pass through a function after
// parsing (tf.data's dataset.map after the parse), e.g. to turn LIBSVM's
// sparse rows into the dense rows a dense model takes, or to check each
// label against what the model's output takes. The function runs on the
// pipeline's parse threads, so it must be thread-safe; an error it returns
// is the record's error, prefixed with the record's location.

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "runtime/input/example.h"
#include "runtime/input/record_reader.h"

namespace distrt {

using ExampleMap = std::function<absl::Status(Example& example)>;

std::shared_ptr<const RecordFormat> MapRecords(
    std::shared_ptr<const RecordFormat> format, ExampleMap map);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_MAPPED_RECORD_FORMAT_H_
