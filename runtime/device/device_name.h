#ifndef DISTRT_RUNTIME_DEVICE_DEVICE_NAME_H_
#define DISTRT_RUNTIME_DEVICE_DEVICE_NAME_H_

// DeviceName: a TensorFlow device string, fully or partly specified, with
// TensorFlow's syntax and meaning (DeviceNameUtils / tf.DeviceSpec):
//
//   /job:worker/replica:0/task:1/device:GPU:0   full
//   /job:ps/task:0                              partial: any device there
//   /device:GPU:*                               any GPU
//   /gpu:0, /cpu:0                              legacy short forms
//   GPU:1, cpu:0                                local names
//   ""                                          nothing specified
//
// "cpu", "gpu" and "tpu" are upper-cased; other device types are kept as
// written. A value type: copy it freely.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt {

struct DeviceName {
  std::optional<std::string> job;
  std::optional<int> replica;
  std::optional<int> task;
  std::optional<std::string> type;  // "CPU", "GPU", ...
  std::optional<int> id;            // unset with a type: any device of it

  // INVALID_ARGUMENT naming the string and what is wrong with it.
  static absl::StatusOr<DeviceName> Parse(absl::string_view name);

  // The canonical form: only the parts that are set, in the order job,
  // replica, task, device; "/device:GPU:*" for a type without an id.
  std::string ToString() const;

  bool IsFullySpecified() const { return job && replica && task && type && id; }

  // TF's MergeDevNames: each part set in `other` is copied here; a part set
  // in both must agree, or INVALID_ARGUMENT names the two and leaves this
  // name unchanged.
  absl::Status MergeFrom(const DeviceName& other);

  // This name with its unset parts taken from `defaults`, part by part (TF's
  // MergeUnsetDevNames, and `defaults.make_merged_spec(this)` in Python):
  // how a partial spec such as "/gpu:1" lands on a default such as
  // "/job:worker/replica:0/task:1/device:CPU:0".
  DeviceName WithDefaults(const DeviceName& defaults) const;

  friend bool operator==(const DeviceName& a, const DeviceName& b) {
    return a.job == b.job && a.replica == b.replica && a.task == b.task &&
           a.type == b.type && a.id == b.id;
  }
  friend bool operator!=(const DeviceName& a, const DeviceName& b) {
    return !(a == b);
  }
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DEVICE_DEVICE_NAME_H_
