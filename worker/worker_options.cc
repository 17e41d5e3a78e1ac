#include "worker/worker_options.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/local_devices/local_devices.h"

namespace distrt {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

// --devices, and whether the model computes on them.
absl::Status CheckDevices(const WorkerOptions& o) {
  LocalDevicesOptions devices;
  if (absl::Status s = ParseDeviceSelection(o.devices, &devices); !s.ok()) {
    return Bad("devices", s.message());
  }
  if (o.model == "torchscript" && devices.require_gpus) {
    return Bad("devices",
               absl::StrCat("\"", o.devices,
                            "\" with --model=torchscript: TorchScript models "
                            "compute on CPU devices (Debian's LibTorch is "
                            "built without CUDA); use --devices=cpu or auto"));
  }
  return absl::OkStatus();
}

// The flags only parameter servers use. With --strategy=auto the strategy
// is known only once the cluster is read; the training loop (read-ahead) and
// MakeStrategy (pushes in the background) refuse them then, before any step.
absl::Status CheckParameterServerFlags(const WorkerOptions& o) {
  const bool may_have_ps = o.strategy == StrategyKind::kAuto ||
                           o.strategy == StrategyKind::kParameterServer;
  const struct {
    bool set;
    const char* flag;
    const char* overlapped;
  } ps_only[] = {{o.read_ahead, "read_ahead", "round trips"},
                 {o.push_in_background, "push_in_background", "pushes"}};
  for (const auto& f : ps_only) {
    if (f.set && !may_have_ps) {
      return Bad(f.flag, absl::StrCat("needs parameter servers "
                                      "(--strategy=parameter_server, or auto "
                                      "with ps tasks): other strategies have "
                                      "no ",
                                      f.overlapped, " to overlap"));
    }
  }
  return absl::OkStatus();
}

// The input pipeline's flags, each against what it may be.
absl::Status CheckInputFlags(const WorkerOptions& o) {
  const auto one_of = [](const std::string& value,
                         std::initializer_list<absl::string_view> accepted) {
    for (absl::string_view a : accepted) {
      if (value == a) return true;
    }
    return false;
  };
  if (!o.data_format.empty() &&
      !one_of(o.data_format, {"libsvm", "csv", "tfrecord"})) {
    return Bad(
        "data_format",
        absl::StrCat("\"", o.data_format, "\" is not libsvm, csv or tfrecord"));
  }
  if (!one_of(o.compression, {"auto", "none", "gzip"})) {
    return Bad("compression", absl::StrCat("\"", o.compression,
                                           "\" is not auto, none or gzip"));
  }
  if (!one_of(o.input_errors, {"fail", "skip"})) {
    return Bad("input_errors",
               absl::StrCat("\"", o.input_errors, "\" is not fail or skip"));
  }
  if (!(o.max_bad_record_fraction >= 0 && o.max_bad_record_fraction <= 1)) {
    return Bad("max_bad_record_fraction", "must be in [0, 1]");
  }
  if (!one_of(o.auto_shard_policy, {"auto", "file", "data", "off"})) {
    return Bad("auto_shard_policy",
               absl::StrCat("\"", o.auto_shard_policy,
                            "\" is not auto, file, data or off"));
  }
  if (o.shuffle_buffer < 1) return Bad("shuffle_buffer", "must be at least 1");
  if (o.cycle_length < 1) return Bad("cycle_length", "must be at least 1");
  if (o.block_length < 1) return Bad("block_length", "must be at least 1");
  if (o.parse_threads < 0 || o.parse_threads > 256) {
    return Bad("parse_threads", "must be in 0..256 (0: the cores)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseHiddenUnits(absl::string_view text) {
  std::vector<int> units;
  if (text.empty()) return units;
  for (absl::string_view unit : absl::StrSplit(text, ',')) {
    int value = 0;
    if (!absl::SimpleAtoi(unit, &value) || value < 1) {
      return Bad("hidden_units",
                 absl::StrCat("\"", unit,
                              "\" is not a positive integer (e.g. 64,32)"));
    }
    units.push_back(value);
  }
  return units;
}

absl::Status ValidateWorkerOptions(const WorkerOptions& o) {
  if (o.train_data.empty()) {
    return Bad("train_data", "required: files, globs or directories");
  }
  if ((o.train_steps > 0) == (o.epochs > 0)) {
    return Bad("train_steps",
               "set exactly one of --train_steps and --epochs (positive)");
  }
  if (o.train_steps < 0) return Bad("train_steps", "must be positive");
  if (o.epochs < 0) return Bad("epochs", "must be positive");
  if (o.global_batch_size < 1) {
    return Bad("global_batch_size", "must be at least 1");
  }
  if (!(o.learning_rate > 0)) return Bad("learning_rate", "must be positive");
  if (o.num_cpu_replicas < 1 || o.num_cpu_replicas > 256) {
    return Bad("num_cpu_replicas", "must be in 1..256");
  }
  if (absl::Status s = CheckDevices(o); !s.ok()) return s;
  if (o.num_features < 0) return Bad("num_features", "must not be negative");
  if (o.num_classes < 0) return Bad("num_classes", "must not be negative");
  if (absl::Status s = CheckInputFlags(o); !s.ok()) return s;
  if (o.checkpoint_every_steps < 0) {
    return Bad("checkpoint_every_steps", "must not be negative");
  }
  if (o.checkpoint_every_secs < 0) {
    return Bad("checkpoint_every_secs", "must not be negative");
  }
  if (o.keep_checkpoints < 0) {
    return Bad("keep_checkpoints", "must not be negative");
  }
  if (o.full_checkpoint_every < 1) {
    return Bad("full_checkpoint_every",
               "must be at least 1 (1: every save is full)");
  }
  if (!(o.delta_checkpoint_max_share >= 0)) {
    return Bad("delta_checkpoint_max_share", "must not be negative");
  }
  if (!(o.log_every_secs > 0)) return Bad("log_every_secs", "must be positive");
  if (!(o.wait_secs > 0)) return Bad("wait_secs", "must be positive");
  if (!(o.ps_failure_timeout_secs > 0)) {
    return Bad("ps_failure_timeout", "must be positive");
  }
  if (!(o.collective_timeout_secs > 0)) {
    return Bad("collective_timeout_secs", "must be positive");
  }
  if (o.all_reduce_bucket_bytes < static_cast<int64_t>(sizeof(float))) {
    return Bad("all_reduce_bucket_bytes", "must be at least 4 (one float)");
  }
  if (absl::Status s = CheckParameterServerFlags(o); !s.ok()) return s;
  if (absl::StatusOr<std::vector<int>> units = ParseHiddenUnits(o.hidden_units);
      !units.ok()) {
    return units.status();
  }
  OptimizerConfig optimizer;
  return MakeOptimizerConfig(o, &optimizer);
}

absl::Status MakeOptimizerConfig(const WorkerOptions& options,
                                 OptimizerConfig* config) {
  absl::StatusOr<OptimizerKind> kind = ParseOptimizerName(options.optimizer);
  if (!kind.ok()) return Bad("optimizer", kind.status().message());
  *config = OptimizerConfig();
  config->kind = *kind;
  config->learning_rate = static_cast<float>(options.learning_rate);
  return ValidateOptimizerConfig(*config);
}

}  // namespace distrt
