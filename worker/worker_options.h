#ifndef DISTRT_WORKER_WORKER_OPTIONS_H_
#define DISTRT_WORKER_WORKER_OPTIONS_H_

// WorkerOptions: everything the worker's flags say, as one value that the
// training job reads, checked as a whole so that a bad combination is one
// clear error before anything starts.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "job/strategy_kind.h"
#include "runtime/distribute/multi_worker_all_reduce.h"
#include "runtime/optimizer/optimizer.h"

namespace distrt {

namespace rpc {
class TransportSecurity;
}  // namespace rpc
class TrainingMetrics;

struct WorkerOptions {
  std::string model = "logreg";
  // --model=torchscript: the module torch.jit.save wrote, and the loss it
  // trains with (runtime/torchscript/torchscript_model.h).
  std::string torchscript_file;
  std::string loss;
  // Files, globs or directories, comma-separated.
  std::string train_data;
  std::string eval_data;
  // "libsvm", "csv" or "tfrecord"; empty: by the files' extension (.csv is
  // CSV, .tfrecord/.tfrecords/.tfrec, also with .gz, TFRecord, anything
  // else LIBSVM).
  std::string data_format;
  // TFRecord files: "auto" (GZIP for names ending .gz or .gzip), "none" or
  // "gzip".
  std::string compression = "auto";
  // A feature spec (runtime/input/feature_spec.h): what each named feature
  // of TFRecord or CSV-with-header data is; empty: none (LIBSVM and CSV as
  // ever). TFRecord data needs one.
  std::string features;

  // The input pipeline (runtime/input/input_pipeline.h, docs/input.md).
  // A record that does not parse: "fail" ends the job (tf.data's way),
  // "skip" drops and counts it, until more than max_bad_record_fraction
  // of the records read were bad.
  std::string input_errors = "fail";
  double max_bad_record_fraction = 0.001;
  // Examples the shuffle draws from (tf.data's buffer_size).
  int64_t shuffle_buffer = 10000;
  // Files read at once, and records taken from each in turn (tf.data's
  // interleave).
  int cycle_length = 4;
  int block_length = 1;
  // Threads parsing records; 0: the cores.
  int parse_threads = 0;
  // "auto", "file", "data" or "off" (tf.data's AutoShardPolicy).
  std::string auto_shard_policy = "auto";
  // Feature ids (sparse models) or dense features; 0: from the training
  // data (every worker scans all of it, so it agrees).
  int64_t num_features = 0;
  int num_classes = 0;  // mlp; 0: from the training labels
  std::string hidden_units = "64,32";
  int64_t embedding_dim = 8;

  // Examples per step of one worker, over its replicas; under the
  // multi-worker mirrored strategy, of all workers together.
  int64_t global_batch_size = 256;
  std::string optimizer = "adagrad";
  double learning_rate = 0.1;
  // Stop when the global step reaches train_steps (all workers' steps
  // together under parameter servers; one step of every worker at once
  // under multi-worker mirrored), or after `epochs` passes over this
  // worker's data (the smallest worker's, under multi-worker mirrored); 0
  // means unset, and one of them must be set.
  int64_t train_steps = 0;
  int64_t epochs = 0;
  uint64_t seed = 1;
  bool shuffle = true;

  StrategyKind strategy = StrategyKind::kAuto;
  int num_cpu_replicas = 1;
  // As ParseDeviceSelection (runtime/local_devices/local_devices.h) reads it:
  // "auto", "cpu", "gpu" or "gpu:<ids>".
  std::string devices = "auto";
  std::string cross_device_ops = "auto";
  // Multi-worker mirrored: how long a worker waits for the others at a
  // collective before giving up (a lost or hung worker), and the largest
  // cross-worker all-reduce (gradients are fused into buckets up to it).
  double collective_timeout_secs = 300;
  int64_t all_reduce_bucket_bytes = MultiWorkerAllReduce::kDefaultBucketBytes;
  // Parameter servers: TrainingLoopOptions::read_ahead.
  bool read_ahead = false;
  // Parameter servers: StrategyOptions::push_in_background.
  bool push_in_background = false;
  // Address the chief serves the workers' rendezvous on (its TF_CONFIG
  // port); empty: the host of its TF_CONFIG address, and only that;
  // "0.0.0.0" is every interface.
  std::string bind_host;

  std::string checkpoint_dir;
  int64_t checkpoint_every_steps = 0;  // 0: off
  double checkpoint_every_secs = 0;    // 0: off
  int keep_checkpoints = 5;
  // Delta checkpoints (docs/checkpoint_format.md): a full save every this
  // many (1: all full), and when the deltas since outgrow this share of the
  // hash-table rows.
  int full_checkpoint_every = 1;
  double delta_checkpoint_max_share = 0.5;
  std::string log_dir;
  std::string metrics_out;
  double log_every_secs = 5;
  // How long to wait for ps tasks, the chief's variables, or the other
  // workers to finish.
  double wait_secs = 300;
  // How long a request to a ps task is retried while the task cannot be
  // reached or does not answer (it may be restarting) before the job fails
  // naming it.
  double ps_failure_timeout_secs = 120;
  // The evaluator gives up when no new checkpoint comes for this long.
  double eval_timeout_secs = 3600;

  // TLS and the cluster token of every connection to the ps tasks and the
  // chief (rpc/transport_security.h); null: plain TCP, no token. Loaded
  // from --tls_* and --cluster_token_file.
  std::shared_ptr<const rpc::TransportSecurity> security;
  // Where the training metrics go (worker/training_metrics.h); borrowed.
  // Null: none (--metrics_port unset).
  TrainingMetrics* metrics = nullptr;
};

// INVALID_ARGUMENT naming the flag for the first bad value: no training
// data, neither or both of train_steps and epochs, non-positive batch size,
// learning rate or replica count, an unknown optimizer or data format,
// hidden units that are not positive integers, negative intervals.
absl::Status ValidateWorkerOptions(const WorkerOptions& options);

// --hidden_units ("64,32") as layer widths; empty for "". INVALID_ARGUMENT
// naming the flag for a part that is not a positive integer.
absl::StatusOr<std::vector<int>> ParseHiddenUnits(absl::string_view text);

// The optimizer the flags name, with their learning rate and Keras'
// defaults otherwise.
absl::Status MakeOptimizerConfig(const WorkerOptions& options,
                                 OptimizerConfig* config);

}  // namespace distrt

#endif  // DISTRT_WORKER_WORKER_OPTIONS_H_
