// worker: a chief, worker or evaluator task of a training job (see
// worker/training_job.h and worker/evaluator_job.h for what they do). Reads
// TF_CONFIG (or Slurm's step); without one it trains alone, mirrored over
// its local devices. This file reads the flags; RunWorker
// (worker/worker_run.h) does the rest.
//
// Exit status: 0 when training finished, 1 when it failed (the error on
// stderr), 2 for bad input: flags (an unwritable --metrics_out included),
// TF_CONFIG, TLS or token files, or malformed data (INVALID_ARGUMENT). An
// unknown flag or a value Abseil cannot parse is refused by Abseil's parser
// first, with status 1 and its "ERROR: " line.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "job/strategy_kind.h"
#include "rpc/grpc_logging.h"
#include "rpc/transport_security_flags.h"
#include "runtime/cluster/environment_cluster.h"
#include "runtime/distribute/multi_worker_all_reduce.h"
#include "runtime/util/malloc_tuning.h"
#include "runtime/util/mutex_checks.h"
#include "worker/worker_options.h"
#include "worker/worker_run.h"

ABSL_FLAG(std::string, model, "logreg",
          "linear, logreg, mlp, wide_deep, torchscript (a PyTorch module "
          "of your own: --torchscript_file and --loss), or a model a build "
          "of the worker registered (runtime/models/model_registry.h).");
ABSL_FLAG(std::string, torchscript_file, "",
          "--model=torchscript: the file torch.jit.script(model).save() "
          "wrote (docs/torchscript.md).");
ABSL_FLAG(std::string, loss, "",
          "--model=torchscript: softmax_cross_entropy, sigmoid_cross_entropy "
          "or mean_squared_error.");
ABSL_FLAG(std::string, train_data, "",
          "Training files: comma-separated files, globs or directories.");
ABSL_FLAG(std::string, eval_data, "",
          "Evaluation files, evaluated by the chief at the end and by the "
          "evaluator task at every checkpoint.");
ABSL_FLAG(std::string, data_format, "",
          "libsvm, csv or tfrecord; by default .csv files are CSV, "
          ".tfrecord/.tfrecords/.tfrec (also .gz) TFRecord, others LIBSVM.");
ABSL_FLAG(std::string, compression, "auto",
          "TFRecord files: auto (gzip for names ending .gz/.gzip), none or "
          "gzip.");
ABSL_FLAG(std::string, features, "",
          "A feature spec (JSON, docs/input.md): the label, numeric and "
          "categorical features of TFRecord or CSV-with-header data, and "
          "their embedding groups. TFRecord data needs one.");
ABSL_FLAG(std::string, input_errors, "fail",
          "A record that does not parse: fail (end the job) or skip (drop "
          "and count it).");
ABSL_FLAG(double, max_bad_record_fraction, 0.001,
          "With --input_errors=skip: the job fails once more than this "
          "share of the records read were bad.");
ABSL_FLAG(int64_t, shuffle_buffer, 10000,
          "Examples the shuffle draws from (tf.data's buffer_size).");
ABSL_FLAG(int, cycle_length, 4, "Files read at once (tf.data's interleave).");
ABSL_FLAG(int, block_length, 1,
          "Records taken from each file in turn (tf.data's interleave).");
ABSL_FLAG(int, parse_threads, 0, "Threads parsing records; 0: the cores.");
ABSL_FLAG(std::string, auto_shard_policy, "auto",
          "How workers split the files: auto (file when there are at least "
          "as many files as workers, else data), file, data or off.");
ABSL_FLAG(int64_t, num_features, 0,
          "Feature ids (sparse models) or dense features; 0: from the data.");
ABSL_FLAG(int, num_classes, 0, "Classes of mlp; 0: from the labels.");
ABSL_FLAG(std::string, hidden_units, "64,32",
          "Hidden layer widths of mlp and wide_deep.");
ABSL_FLAG(int64_t, embedding_dim, 8, "Embedding width of wide_deep.");
ABSL_FLAG(int64_t, global_batch_size, 256,
          "Examples per step of one worker, split over its replicas; under "
          "multi_worker_mirrored, of all workers, split over all replicas.");
ABSL_FLAG(std::string, optimizer, "adagrad",
          "sgd, momentum, adagrad, adam or ftrl (run where the variables "
          "are: on the ps tasks, or on every worker's mirrors).");
ABSL_FLAG(double, learning_rate, 0.1, "The optimizer's learning rate.");
ABSL_FLAG(int64_t, train_steps, 0,
          "Stop at this global step: with parameter servers, all workers' "
          "steps together; under multi_worker_mirrored, steps of all "
          "workers at once.");
ABSL_FLAG(int64_t, epochs, 0,
          "Or: stop after this many passes over this worker's data.");
ABSL_FLAG(uint64_t, seed, 1, "Seed of initial values and shuffling.");
ABSL_FLAG(bool, shuffle, true, "Shuffle the training data every epoch.");
ABSL_FLAG(std::string, strategy, "auto",
          "auto (parameter_server with ps tasks, else multi_worker_mirrored "
          "with several chief/worker tasks, else mirrored), one_device, "
          "mirrored, central_storage, parameter_server or "
          "multi_worker_mirrored.");
ABSL_FLAG(int, num_cpu_replicas, 1,
          "Replicas (logical CPU devices) when training on CPUs.");
ABSL_FLAG(std::string, devices, "auto",
          "auto: every usable GPU, otherwise CPU replicas (saying why); "
          "cpu: CPUs only; gpu: every GPU, an error when there is none; "
          "gpu:0,2: those GPUs (numbered after CUDA_VISIBLE_DEVICES).");
ABSL_FLAG(std::string, cross_device_ops, "auto",
          "auto, cpu_all_reduce, reduction_to_one_device, "
          "hierarchical_copy or nccl (GPUs).");
ABSL_FLAG(double, collective_timeout_secs, 300,
          "multi_worker_mirrored: how long a worker waits for the others at "
          "a collective before it stops with an error naming the lost task.");
ABSL_FLAG(int64_t, all_reduce_bucket_bytes,
          distrt::MultiWorkerAllReduce::kDefaultBucketBytes,
          "multi_worker_mirrored: largest cross-worker all-reduce; the fused "
          "gradients go in buckets up to this size.");
ABSL_FLAG(bool, read_ahead, false,
          "parameter_server: read each step's values from the ps tasks "
          "during the step before, with its push (one replica, pushes in "
          "the foreground) or beside it: "
          "one round trip per step instead of two, and a step may compute "
          "with values that lack this worker's previous step "
          "(docs/parameter_server.md).");
ABSL_FLAG(bool, push_in_background, false,
          "parameter_server: push each step's update on a thread of its own "
          "while the next step computes (one push in flight at most): a "
          "step may compute with values that lack this worker's previous "
          "step, and a failed push is reported by the step after "
          "(docs/parameter_server.md).");
ABSL_FLAG(std::string, bind_host, "",
          "multi_worker_mirrored: address the chief serves the workers' "
          "rendezvous on, at its TF_CONFIG port. Default: the host of its "
          "TF_CONFIG address, and only that; \"0.0.0.0\" is every "
          "interface.");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "Where the chief checkpoints and restores from at start.");
ABSL_FLAG(int64_t, checkpoint_every_steps, 0,
          "Checkpoint every N global steps (0: off).");
ABSL_FLAG(double, checkpoint_every_secs, 0,
          "Checkpoint every N seconds (0: off); a last one is always saved.");
ABSL_FLAG(int, keep_checkpoints, 5, "Checkpoints kept (0: all).");
ABSL_FLAG(int, full_checkpoint_every, 1,
          "With ps tasks: a full checkpoint every N saves, delta checkpoints "
          "(hash-table rows changed since the previous save) between; 1: "
          "every save is full. docs/checkpoint_format.md.");
ABSL_FLAG(double, delta_checkpoint_max_share, 0.5,
          "Also a full checkpoint once the deltas since the last full one "
          "wrote more than this share of the hash-table rows.");
ABSL_FLAG(std::string, log_dir, "", "Where the chief writes summaries.");
ABSL_FLAG(std::string, metrics_out, "",
          "The chief writes the final metrics here as JSON; the evaluator "
          "writes the metrics of each checkpoint it evaluates next to it, as "
          "NAME.evaluator.json.");
ABSL_FLAG(double, log_every_secs, 5, "Seconds between progress lines.");
ABSL_FLAG(absl::Duration, ps_failure_timeout, absl::Minutes(2),
          "How long a request to a ps task is sent again while the task "
          "cannot be reached or does not answer (e.g. \"90s\", \"5m\"): "
          "a ps task restarted within it (same address) is used again and "
          "the job goes on; after it, the job fails naming the task.");
ABSL_FLAG(int, metrics_port, -1,
          "Serve Prometheus metrics (steps, examples, global step, ps "
          "restarts seen) at http://HOST:PORT/metrics on this task's TF_CONFIG "
          "host (loopback without TF_CONFIG, or in a job with TLS); 0: a free "
          "port, printed at start; -1: off.");
ABSL_FLAG(std::string, metrics_host, "",
          "Where --metrics_port listens instead (\"0.0.0.0\": everywhere). "
          "In a job with TLS only loopback is accepted: the endpoint is "
          "plain HTTP without authentication (docs/security.md).");
ABSL_FLAG(double, wait_secs, 300,
          "How long to wait for ps tasks, the chief, or other workers.");
ABSL_FLAG(double, eval_timeout_secs, 3600,
          "The evaluator exits with an error when no new checkpoint comes "
          "for this long.");

namespace distrt {
namespace {

// Every flag but --strategy (parsed by Main, which names the flag in its
// error) into the options RunWorker takes.
WorkerRunOptions OptionsFromFlags() {
  WorkerRunOptions run;
  WorkerOptions& o = run.job;
  o.model = absl::GetFlag(FLAGS_model);
  o.torchscript_file = absl::GetFlag(FLAGS_torchscript_file);
  o.loss = absl::GetFlag(FLAGS_loss);
  o.train_data = absl::GetFlag(FLAGS_train_data);
  o.eval_data = absl::GetFlag(FLAGS_eval_data);
  o.data_format = absl::GetFlag(FLAGS_data_format);
  o.compression = absl::GetFlag(FLAGS_compression);
  o.features = absl::GetFlag(FLAGS_features);
  o.input_errors = absl::GetFlag(FLAGS_input_errors);
  o.max_bad_record_fraction = absl::GetFlag(FLAGS_max_bad_record_fraction);
  o.shuffle_buffer = absl::GetFlag(FLAGS_shuffle_buffer);
  o.cycle_length = absl::GetFlag(FLAGS_cycle_length);
  o.block_length = absl::GetFlag(FLAGS_block_length);
  o.parse_threads = absl::GetFlag(FLAGS_parse_threads);
  o.auto_shard_policy = absl::GetFlag(FLAGS_auto_shard_policy);
  o.num_features = absl::GetFlag(FLAGS_num_features);
  o.num_classes = absl::GetFlag(FLAGS_num_classes);
  o.hidden_units = absl::GetFlag(FLAGS_hidden_units);
  o.embedding_dim = absl::GetFlag(FLAGS_embedding_dim);
  o.global_batch_size = absl::GetFlag(FLAGS_global_batch_size);
  o.optimizer = absl::GetFlag(FLAGS_optimizer);
  o.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  o.train_steps = absl::GetFlag(FLAGS_train_steps);
  o.epochs = absl::GetFlag(FLAGS_epochs);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.shuffle = absl::GetFlag(FLAGS_shuffle);
  o.num_cpu_replicas = absl::GetFlag(FLAGS_num_cpu_replicas);
  o.devices = absl::GetFlag(FLAGS_devices);
  o.cross_device_ops = absl::GetFlag(FLAGS_cross_device_ops);
  o.collective_timeout_secs = absl::GetFlag(FLAGS_collective_timeout_secs);
  o.all_reduce_bucket_bytes = absl::GetFlag(FLAGS_all_reduce_bucket_bytes);
  o.read_ahead = absl::GetFlag(FLAGS_read_ahead);
  o.push_in_background = absl::GetFlag(FLAGS_push_in_background);
  o.bind_host = absl::GetFlag(FLAGS_bind_host);
  o.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  o.checkpoint_every_steps = absl::GetFlag(FLAGS_checkpoint_every_steps);
  o.checkpoint_every_secs = absl::GetFlag(FLAGS_checkpoint_every_secs);
  o.keep_checkpoints = absl::GetFlag(FLAGS_keep_checkpoints);
  o.full_checkpoint_every = absl::GetFlag(FLAGS_full_checkpoint_every);
  o.delta_checkpoint_max_share =
      absl::GetFlag(FLAGS_delta_checkpoint_max_share);
  o.log_dir = absl::GetFlag(FLAGS_log_dir);
  o.metrics_out = absl::GetFlag(FLAGS_metrics_out);
  o.log_every_secs = absl::GetFlag(FLAGS_log_every_secs);
  o.wait_secs = absl::GetFlag(FLAGS_wait_secs);
  o.ps_failure_timeout_secs =
      absl::ToDoubleSeconds(absl::GetFlag(FLAGS_ps_failure_timeout));
  o.eval_timeout_secs = absl::GetFlag(FLAGS_eval_timeout_secs);
  run.security = rpc::TransportSecurityOptionsFromFlags();
  run.slurm_jobs = absl::GetFlag(FLAGS_slurm_jobs);
  run.slurm_port_base = absl::GetFlag(FLAGS_slurm_port_base);
  run.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  run.metrics_host = absl::GetFlag(FLAGS_metrics_host);
  return run;
}

int Main(int argc, char** argv) {
  const absl::Time start_time = absl::Now();
  absl::SetProgramUsageMessage(
      "worker --model=logreg --train_data=FILES (--train_steps=N | "
      "--epochs=N) [flags]\n"
      "Runs the chief, worker or evaluator task named by TF_CONFIG; without "
      "TF_CONFIG it trains alone on its local devices. The evaluator "
      "evaluates every new checkpoint in --checkpoint_dir on --eval_data and "
      "exits after the chief's final one.");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  rpc::QuietGrpcLoggingUnlessRequested();
  if (args.size() > 1) {
    std::fprintf(stderr, "worker: unexpected argument \"%s\" (see --help)\n",
                 args[1]);
    return 2;
  }
  WorkerRunOptions options = OptionsFromFlags();
  options.start_time = start_time;
  absl::StatusOr<StrategyKind> kind =
      ParseStrategyKind(absl::GetFlag(FLAGS_strategy));
  if (!kind.ok()) {
    std::fprintf(stderr, "worker: --strategy: %s\n",
                 std::string(kind.status().message()).c_str());
    return 2;
  }
  options.job.strategy = *kind;
  return RunWorker(options);
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) {
  distrt::KeepLargeAllocationsInHeap();
  distrt::ConfigureMutexDeadlockDetection();
  return distrt::Main(argc, argv);
}
