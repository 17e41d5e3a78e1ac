// gpu_bench: what a GPU gives over this machine's CPU, each figure beside
// the same work on the CPU measured in the same run (ratio = GPU / CPU):
//
//   - kernels: GEMM (cuBLAS vs Eigen) in GFLOP/s at 512, 2048 and 4096
//     (4096: the size the GPU kit compares with torch.matmul); an
//     elementwise kernel (axpy) in GB/s; the softmax cross-entropy in
//     elements/s;
//   - a training step of an MLP (forward, backward, all-reduce, optimizer),
//     one GPU vs one CPU device, and every GPU (NCCL) vs the CPU, in
//     examples/s.
//
// Built with --config=cuda only:
//   bazel run --config=cuda //bench:gpu_bench -- [--json FILE]
// Without a usable GPU it says why and exits 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_report.h"
#include "runtime/device/cpu_device.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/one_device_strategy.h"
#include "runtime/gpu/gpu_probe.h"
#include "runtime/input/batch.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/models/model_config.h"
#include "runtime/training/model_variables.h"
#include "runtime/training/train_step.h"

ABSL_FLAG(std::string, json, "", "Also write the figures to this file.");

namespace distrt::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call of `run` (which ends by synchronising its device): the
// best of `repeats` after a warm-up call. The GPU kit times PyTorch the same
// way (tools/gpu_kit/torch_compare.py).
double SecondsPerCall(const std::function<void()>& run, int repeats) {
  run();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    run();
    best = std::min(
        best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

// `n` random floats in [-1, 1) on `device`.
float* RandomOn(Device& device, int64_t n, std::vector<Tensor>* keep) {
  std::mt19937 rng(n);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> host(n);
  for (float& v : host) v = uniform(rng);
  absl::StatusOr<Tensor> on = device.CopyFrom(*Tensor::FromFloats(host, {n}));
  if (!on.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", on.status().ToString().c_str());
    std::exit(1);
  }
  keep->push_back(*std::move(on));
  return static_cast<float*>(keep->back().raw_data());
}

void Check(const absl::Status& s) {
  if (s.ok()) return;
  std::fprintf(stderr, "gpu_bench: %s\n", s.ToString().c_str());
  std::exit(1);
}

// GPU calls take micro- to milliseconds: many repeats steady the best.
// The CPU's take up to seconds (a 4096 GEMM): few.
constexpr int kGpuRepeats = 20;
constexpr int kCpuRepeats = 3;

void Kernels(Device& gpu, Device& cpu, BenchReport& report) {
  report.BeginFamily("kernels, GPU vs CPU (higher is better)",
                     "ratio = GPU / CPU, same sizes");
  for (int64_t size : {512, 2048, 4096}) {
    double gflops[2];
    Device* devices[2] = {&gpu, &cpu};
    for (int d = 0; d < 2; ++d) {
      std::vector<Tensor> keep;
      Device& device = *devices[d];
      float* a = RandomOn(device, size * size, &keep);
      float* b = RandomOn(device, size * size, &keep);
      float* c = RandomOn(device, size * size, &keep);
      const int repeats = d == 0 ? kGpuRepeats : size >= 4096 ? 1 : kCpuRepeats;
      const double seconds = SecondsPerCall(
          [&] {
            Check(device.math().Gemm(false, false, size, size, size, 1.0f, a, b,
                                     0.0f, c));
            Check(device.Synchronize());
          },
          repeats);
      gflops[d] = 2.0 * size * size * size / seconds / 1e9;
    }
    report.Add(absl::StrCat("kernels/gemm/", size), gflops[0], "GFLOP/s",
               "cpu_eigen", gflops[1]);
  }
  {
    const int64_t n = int64_t{1} << 24;
    double rate[2];
    Device* devices[2] = {&gpu, &cpu};
    for (int d = 0; d < 2; ++d) {
      std::vector<Tensor> keep;
      float* x = RandomOn(*devices[d], n, &keep);
      float* y = RandomOn(*devices[d], n, &keep);
      const double seconds = SecondsPerCall(
          [&] {
            Check(devices[d]->math().Axpy(n, 0.5f, x, y));
            Check(devices[d]->Synchronize());
          },
          d == 0 ? kGpuRepeats : kCpuRepeats);
      rate[d] = 3.0 * n * sizeof(float) / seconds / 1e9;
    }
    report.Add("kernels/axpy/16M", rate[0], "GB/s", "cpu", rate[1]);
  }
  {
    const int64_t rows = 65536, classes = 100;
    double rate[2];
    Device* devices[2] = {&gpu, &cpu};
    for (int d = 0; d < 2; ++d) {
      std::vector<Tensor> keep;
      float* logits = RandomOn(*devices[d], rows * classes, &keep);
      std::vector<float> labels(rows);
      for (int64_t i = 0; i < rows; ++i) labels[i] = i % classes;
      absl::StatusOr<Tensor> label_tensor =
          devices[d]->CopyFrom(*Tensor::FromFloats(labels, {rows}));
      Check(label_tensor.status());
      float* probabilities = RandomOn(*devices[d], rows * classes, &keep);
      float* d_logits = RandomOn(*devices[d], rows * classes, &keep);
      float* losses = RandomOn(*devices[d], rows, &keep);
      const double seconds = SecondsPerCall(
          [&] {
            Check(devices[d]->math().SoftmaxCrossEntropy(
                rows, classes, logits,
                static_cast<const float*>(label_tensor->raw_data()),
                probabilities, losses, d_logits));
            Check(devices[d]->Synchronize());
          },
          d == 0 ? kGpuRepeats : kCpuRepeats);
      rate[d] = rows * classes / seconds;
    }
    report.Add("kernels/softmax_xent/65536x100", rate[0], "elements/s", "cpu",
               rate[1]);
  }
}

// A synthetic MLP batch: 256 dense features, 10 classes.
std::vector<Batch> Batches(int replicas, int64_t global_batch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<Batch> batches;
  for (int r = 0; r < replicas; ++r) {
    std::vector<Example> examples(global_batch / replicas);
    for (size_t i = 0; i < examples.size(); ++i) {
      examples[i].label = static_cast<float>(i % 10);
      examples[i].dense.resize(256);
      for (float& v : examples[i].dense) v = uniform(rng);
    }
    absl::StatusOr<Batch> batch = MakeBatch(examples);
    Check(batch.status());
    batches.push_back(*std::move(batch));
  }
  return batches;
}

// Examples per second of TrainStep under `strategy`.
double StepRate(Strategy& strategy, const Model& model, int64_t global_batch,
                int repeats) {
  absl::StatusOr<ModelVariables> variables =
      ModelVariables::Create(strategy, model);
  Check(variables.status());
  const std::vector<Batch> batches =
      Batches(strategy.num_local_replicas(), global_batch);
  const double seconds = SecondsPerCall(
      [&] { Check(TrainStep(strategy, model, *variables, batches).status()); },
      repeats);
  return global_batch / seconds;
}

void TrainingSteps(const LocalDevices& gpus, Device& cpu, BenchReport& report) {
  report.BeginFamily("MLP training step (higher is better)",
                     "ratio = GPU examples/s / one CPU device's");
  ModelConfig config;
  config.name = "mlp";
  config.num_features = 256;
  config.num_classes = 10;
  config.hidden_units = {1024, 1024};
  absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(config);
  Check(model.status());
  const int64_t batch = 4096;
  std::unique_ptr<Strategy> on_cpu = *OneDeviceStrategy::Create(&cpu);
  const double cpu_rate = StepRate(*on_cpu, **model, batch, kCpuRepeats);
  std::unique_ptr<Strategy> on_gpu =
      *OneDeviceStrategy::Create(gpus.devices[0].get());
  report.Add("train_step/mlp/1gpu",
             StepRate(*on_gpu, **model, batch, kGpuRepeats), "examples/s",
             "1_cpu_device", cpu_rate);
  if (gpus.devices.size() > 1) {
    std::unique_ptr<Strategy> mirrored =
        *MirroredStrategy::Create(gpus.pointers());
    report.Add(
        absl::StrCat("train_step/mlp/", gpus.devices.size(), "gpu"),
        StepRate(*mirrored, **model, batch * gpus.devices.size(), kGpuRepeats),
        "examples/s", "1_cpu_device", cpu_rate);
  }
}

int Main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  LocalDevicesOptions options;
  Check(ParseDeviceSelection("gpu", &options));
  absl::StatusOr<LocalDevices> gpus = CreateLocalDevices(options);
  if (!gpus.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", gpus.status().ToString().c_str());
    return 1;
  }
  std::printf("devices: %s\n", gpus->description.c_str());
  CpuDevice cpu(DeviceName(), 0);
  BenchReport report;
  Kernels(*gpus->devices[0], cpu, report);
  TrainingSteps(*gpus, cpu, report);
  if (const std::string json = absl::GetFlag(FLAGS_json); !json.empty()) {
    Check(report.WriteJson(json));
  }
  return 0;
}

}  // namespace
}  // namespace distrt::bench

int main(int argc, char** argv) { return distrt::bench::Main(argc, argv); }
