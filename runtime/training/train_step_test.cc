// The same model trained on the same global batches must end with the same
// weights (within float rounding) whatever the strategy: one device,
// mirrored over 4 CPU replicas, central storage over 3, mirrored over 3
// workers of 2 replicas each, or variables on two in-process parameter
// servers with 2 replicas. This is what makes a
// strategy a deployment choice rather than a change of the model.

#include "runtime/training/train_step.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/collective/kv_store.h"
#include "runtime/device/opaque_memory_device.h"
#include "runtime/distribute/central_storage_strategy.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/multi_worker_mirrored_strategy.h"
#include "runtime/distribute/one_device_strategy.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/gpu/gpu_probe.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"
#include "runtime/input/batch.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/models/model_config.h"
#include "runtime/training/model_variables.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kExamples = 70;  // not a multiple of the global batch
constexpr int kGlobalBatch = 16;
constexpr int kDenseFeatures = 6;
constexpr int kSparseFeatures = 40;

bool IsSparseModel(const std::string& name) {
  return name == "logreg" || name == "wide_deep";
}

std::vector<Example> MakeData(const std::string& model, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<Example> data(kExamples);
  for (Example& e : data) {
    if (IsSparseModel(model)) {
      std::vector<bool> used(kSparseFeatures);
      float score = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t id = rng() % kSparseFeatures;
        if (used[id]) continue;
        used[id] = true;
      }
      for (int64_t id = 0; id < kSparseFeatures; ++id) {
        if (!used[id]) continue;
        e.ids.push_back(id);
        e.values.push_back(1.0f + 0.5f * uniform(rng));
        score += (id % 3 == 0 ? 1.0f : -0.5f) * e.values.back();
      }
      e.label = score > 0 ? 1.0f : 0.0f;
    } else {
      float score = 0;
      for (int j = 0; j < kDenseFeatures; ++j) {
        e.dense.push_back(uniform(rng));
        score += (j + 1) * 0.3f * e.dense.back();
      }
      if (model == "linear") {
        e.label = score + 0.1f;
      } else {  // mlp, 3 classes
        e.label = score < -0.5f ? 0.0f : (score < 0.5f ? 1.0f : 2.0f);
      }
    }
  }
  return data;
}

ModelConfig ConfigFor(const std::string& name) {
  ModelConfig config;
  config.name = name;
  config.num_features = IsSparseModel(name) ? kSparseFeatures : kDenseFeatures;
  config.num_classes = 3;
  config.hidden_units = {8, 4};
  config.embedding_dim = 4;
  config.seed = 42;
  config.optimizer.learning_rate = 0.2f;
  // Several parts on the two ps tasks.
  config.partition = PartitionPolicy::FixedShards(2);
  return config;
}

// The global batch of `step` split over `replicas` as the input pipeline
// does: contiguous, sizes differing by at most one, earlier ones larger.
std::vector<Batch> StepBatches(const std::vector<Example>& data, int step,
                               int replicas) {
  const int begin = step * kGlobalBatch;
  const int end = std::min<int>(begin + kGlobalBatch, data.size());
  std::vector<Batch> batches;
  int at = begin;
  for (int r = 0; r < replicas; ++r) {
    const int size = (end - begin) / replicas + (r < (end - begin) % replicas);
    absl::StatusOr<Batch> batch =
        MakeBatch(absl::MakeConstSpan(data).subspan(at, size));
    EXPECT_TRUE(batch.ok()) << batch.status();
    batches.push_back(*std::move(batch));
    at += size;
  }
  return batches;
}

// Every variable's final values by name: dense and row-sparse variables
// whole, hash embeddings for every feature id.
using Weights = std::map<std::string, std::vector<float>>;

// Trains on every step's global batch; this strategy's replicas take the
// batches of replicas [first_replica, first_replica + its replicas) of the
// global batch split over `global_replicas` (one worker of several: its part
// of each global batch, as a multi-worker input pipeline gives it).
// A float32 tensor's elements, wherever it lives (GPU copies of mirrored
// variables are read back through their allocator).
std::vector<float> HostFloats(const Tensor& tensor) {
  std::vector<float> out(tensor.num_elements());
  EXPECT_TRUE(tensor.allocator()
                  ->CopyToHost(tensor.raw_data(), out.data(), tensor.bytes())
                  .ok());
  return out;
}

Weights Train(Strategy& strategy, const Model& model,
              const std::vector<Example>& data, double* last_loss,
              int global_replicas = 0, int first_replica = 0) {
  const int local = strategy.num_local_replicas();
  if (global_replicas == 0) global_replicas = local;
  absl::StatusOr<ModelVariables> variables =
      ModelVariables::Create(strategy, model);
  EXPECT_TRUE(variables.ok()) << variables.status();
  const int steps = (kExamples + kGlobalBatch - 1) / kGlobalBatch;
  for (int step = 0; step < steps; ++step) {
    std::vector<Batch> all = StepBatches(data, step, global_replicas);
    std::vector<Batch> batches(
        std::make_move_iterator(all.begin() + first_replica),
        std::make_move_iterator(all.begin() + first_replica + local));
    absl::StatusOr<StepResult> result =
        TrainStep(strategy, model, *variables, batches);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return {};
    EXPECT_EQ(result->examples,
              std::min(kGlobalBatch, kExamples - step * kGlobalBatch));
    *last_loss = result->mean_loss();
  }
  EXPECT_EQ(*variables->ReadGlobalStep(strategy), steps);

  Weights weights;
  for (int i = 0; i < variables->size(); ++i) {
    const ModelVariable& v = model.variables()[i];
    std::vector<float>& out = weights[v.name()];
    if (variables->hash_table(i) != nullptr) {
      std::vector<int64_t> ids(kSparseFeatures);
      for (int64_t id = 0; id < kSparseFeatures; ++id) ids[id] = id;
      out.resize(ids.size() * v.row_width());
      EXPECT_TRUE(
          variables->hash_table(i)->Pull(ids, absl::MakeSpan(out)).ok());
      continue;
    }
    DistributedVariable& variable = *variables->variable(i);
    absl::StatusOr<Tensor> value = strategy.ReadVar(variable);
    EXPECT_TRUE(value.ok()) << value.status();
    out = HostFloats(*value);
    // Mirrors must stay identical, bit for bit: they get the same updates.
    for (int c = 1; c < variable.num_copies(); ++c) {
      absl::StatusOr<Tensor> copy = variable.ReadCopy(c);
      EXPECT_EQ(HostFloats(*copy), out) << v.name() << " copy " << c;
    }
  }
  return weights;
}

void ExpectSameWeights(const Weights& expected, const Weights& got,
                       const std::string& what, double tolerance = 2e-5) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  for (const auto& [name, values] : expected) {
    const std::vector<float>& other = got.at(name);
    ASSERT_EQ(values.size(), other.size()) << what << " " << name;
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_NEAR(other[i], values[i], tolerance * (1 + std::abs(values[i])))
          << what << ": " << name << "[" << i << "]";
    }
  }
}

// Trains under MultiWorkerMirroredStrategy on devices.size() workers
// (threads here, processes in a job) reducing over Gloo: worker w on
// devices[w], taking replicas w * k .. w * k + k - 1 of each global batch
// (k devices each), each with `strategy_options`. Returns each worker's
// weights; `description` gets worker 0's Describe().
std::vector<Weights> TrainOnWorkers(
    const Model& model, const std::vector<Example>& data,
    const std::vector<std::vector<Device*>>& devices, const std::string& prefix,
    const StrategyOptions& strategy_options = {},
    std::string* description = nullptr) {
  const int workers = static_cast<int>(devices.size());
  const int k = static_cast<int>(devices[0].size());
  InMemoryKvStore store;
  std::vector<Weights> per_worker(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      GlooGroup::Options options;
      options.rank = w;
      options.size = workers;
      options.prefix = prefix;
      options.timeout = absl::Seconds(60);
      absl::StatusOr<std::unique_ptr<GlooGroup>> group =
          GlooGroup::Create(&store, options);
      ASSERT_TRUE(group.ok()) << group.status();
      absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> worker =
          MultiWorkerMirroredStrategy::Create(devices[w], group->get(),
                                              strategy_options);
      ASSERT_TRUE(worker.ok()) << worker.status();
      if (w == 0 && description != nullptr) {
        *description = (*worker)->Describe();
      }
      ASSERT_TRUE((*worker)->Initialize().ok());
      double loss = 0;
      per_worker[w] = Train(**worker, model, data, &loss, workers * k, w * k);
    });
  }
  for (std::thread& t : threads) t.join();
  return per_worker;
}

// Two parameter servers in this process (the strategy over ps_server
// processes runs in tests/).
std::unique_ptr<InMemoryParameterServers> TwoPsTasks() {
  absl::StatusOr<std::unique_ptr<InMemoryParameterServers>> servers =
      InMemoryParameterServers::Create(2);
  EXPECT_TRUE(servers.ok()) << servers.status();
  return servers.ok() ? *std::move(servers) : nullptr;
}

// Trains under ParameterServerStrategy on `devices`, with two ps tasks.
Weights TrainOnParameterServers(const Model& model,
                                const std::vector<Example>& data,
                                std::vector<Device*> devices) {
  std::unique_ptr<InMemoryParameterServers> servers = TwoPsTasks();
  if (servers == nullptr) return {};
  std::unique_ptr<ParameterServerStrategy> ps =
      *ParameterServerStrategy::Create(std::move(devices), servers.get());
  EXPECT_TRUE(ps->Initialize().ok());
  double loss = 0;
  Weights weights = Train(*ps, model, data, &loss);
  EXPECT_TRUE(ps->Finalize().ok());
  return weights;
}

class StrategyEquivalenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::vector<Device*> Devices(int n) {
    LocalDevicesOptions options;
    options.num_cpu_devices = n;
    options.use_gpus = false;
    absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
    EXPECT_TRUE(devices.ok()) << devices.status();
    local_.push_back(std::make_unique<LocalDevices>(*std::move(devices)));
    return local_.back()->pointers();
  }

  // Why a test that needs `needed` GPUs must skip here; empty when it can
  // run.
  static std::string MissingGpus(size_t needed) {
    const gpu::GpuProbeResult probe = gpu::ProbeGpus();
    if (probe.gpus.empty()) {
      return absl::StrCat("no usable GPU: ", probe.unavailable_reason);
    }
    if (probe.gpus.size() < needed) {
      return absl::StrCat("needs ", needed, " or more GPUs; this machine has ",
                          probe.gpus.size());
    }
    return "";
  }

  // What `model` learns from `data` on one CPU device: the reference every
  // other strategy must reach.
  Weights TrainOnOneCpuDevice(const Model& model,
                              const std::vector<Example>& data) {
    double loss = 0;
    std::unique_ptr<Strategy> one = *OneDeviceStrategy::Create(Devices(1)[0]);
    return Train(*one, model, data, &loss);
  }

  // Every GPU of the machine (empty, with a test failure, when they cannot
  // be set up). Callers skip first when there are fewer than they need.
  std::vector<Device*> GpuDevices() {
    LocalDevicesOptions options;
    EXPECT_TRUE(ParseDeviceSelection("gpu", &options).ok());
    absl::StatusOr<LocalDevices> gpus = CreateLocalDevices(options);
    EXPECT_TRUE(gpus.ok()) << gpus.status();
    if (!gpus.ok()) return {};
    local_.push_back(std::make_unique<LocalDevices>(*std::move(gpus)));
    return local_.back()->pointers();
  }

  std::vector<std::unique_ptr<LocalDevices>> local_;
};

// Summation orders on GPUs differ from the CPU's (cuBLAS, NCCL, atomics).
constexpr double kGpuTolerance = 2e-4;

TEST_P(StrategyEquivalenceTest, EveryStrategyTrainsTheSameWeights) {
  const std::string name = GetParam();
  absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(ConfigFor(name));
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<Example> data = MakeData(name, 7);

  double loss = 0;
  std::unique_ptr<Strategy> one = *OneDeviceStrategy::Create(Devices(1)[0]);
  const Weights reference = Train(*one, **model, data, &loss);
  ASSERT_FALSE(reference.empty());
  EXPECT_TRUE(std::isfinite(loss));

  // Training moved the weights (otherwise equality would prove nothing).
  std::unique_ptr<Strategy> untrained =
      *OneDeviceStrategy::Create(Devices(1)[0]);
  absl::StatusOr<ModelVariables> initial =
      ModelVariables::Create(*untrained, **model);
  ASSERT_TRUE(initial.ok());
  double moved = 0;
  for (int i = 0; i < initial->size(); ++i) {
    if (initial->variable(i) == nullptr) continue;
    auto before = untrained->ReadVar(*initial->variable(i));
    const std::vector<float>& after =
        reference.at((**model).variables()[i].name());
    for (size_t k = 0; k < after.size(); ++k) {
      moved += std::abs(after[k] - before->flat<float>()[k]);
    }
  }
  EXPECT_GT(moved, 1e-3);

  std::unique_ptr<Strategy> mirrored = *MirroredStrategy::Create(Devices(4));
  ExpectSameWeights(reference, Train(*mirrored, **model, data, &loss),
                    "MirroredStrategy x4");

  StrategyOptions hierarchical;
  hierarchical.cross_device_ops = "hierarchical_copy";
  std::unique_ptr<Strategy> mirrored_hierarchical =
      *MirroredStrategy::Create(Devices(5), hierarchical);
  ExpectSameWeights(reference,
                    Train(*mirrored_hierarchical, **model, data, &loss),
                    "MirroredStrategy x5 hierarchical copy");

  std::unique_ptr<Strategy> central =
      *CentralStorageStrategy::Create(Devices(3));
  ExpectSameWeights(reference, Train(*central, **model, data, &loss),
                    "CentralStorageStrategy x3");

  // Three workers (threads here, processes in a job) of 2 replicas each,
  // reducing over Gloo: worker w takes replicas 2w, 2w + 1 of each batch.
  {
    std::vector<std::vector<Device*>> devices;
    for (int w = 0; w < 3; ++w) devices.push_back(Devices(2));
    const std::vector<Weights> per_worker = TrainOnWorkers(
        **model, data, devices, absl::StrCat("equivalence/", name));
    for (size_t w = 0; w < per_worker.size(); ++w) {
      ExpectSameWeights(reference, per_worker[w],
                        absl::StrCat("MultiWorkerMirroredStrategy worker ", w,
                                     " of 3, x2 each"));
    }
  }

  // Two parameter servers.
  std::unique_ptr<InMemoryParameterServers> servers = TwoPsTasks();
  ASSERT_NE(servers, nullptr);
  std::unique_ptr<ParameterServerStrategy> ps =
      *ParameterServerStrategy::Create(Devices(2), servers.get());
  ASSERT_TRUE(ps->Initialize().ok());
  const Weights on_servers = Train(*ps, **model, data, &loss);
  ExpectSameWeights(reference, on_servers, "ParameterServerStrategy x2");
  EXPECT_TRUE(ps->Finalize().ok());
  if (IsSparseModel(name)) {
    // The row-sparse weights really are split over both ps tasks.
    absl::StatusOr<VariablePlacement> placement =
        servers->Lookup((**model).variables()[0].name());
    ASSERT_TRUE(placement.ok()) << placement.status();
    EXPECT_EQ(placement->parts.size(), 2u);
  }
}

// The path GPU replicas take, on devices whose memory the host may not
// read (OpaqueMemoryDevice: CPU arithmetic, GPU bookkeeping): values
// uploaded, dense gradients written into a buffer in device memory,
// reduced there by hierarchical copy (and across workers through the host),
// downloaded once. Runs everywhere, so a GPU machine is needed only for
// the CUDA parts themselves.
TEST_P(StrategyEquivalenceTest, OpaqueMemoryReplicasTrainTheSameWeights) {
  const std::string name = GetParam();
  absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(ConfigFor(name));
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<Example> data = MakeData(name, 7);
  double loss = 0;
  std::unique_ptr<Strategy> one = *OneDeviceStrategy::Create(Devices(1)[0]);
  const Weights reference = Train(*one, **model, data, &loss);

  std::vector<std::unique_ptr<OpaqueMemoryDevice>> owned;
  auto opaque = [&owned](int n) {
    std::vector<Device*> devices;
    for (int i = 0; i < n; ++i) {
      owned.push_back(std::make_unique<OpaqueMemoryDevice>(i));
      devices.push_back(owned.back().get());
    }
    return devices;
  };

  std::unique_ptr<Strategy> mirrored = *MirroredStrategy::Create(opaque(3));
  EXPECT_THAT(mirrored->Describe(), HasSubstr("hierarchical_copy"));
  ExpectSameWeights(reference, Train(*mirrored, **model, data, &loss),
                    "MirroredStrategy x3 on opaque memory");
  int64_t downloaded = 0;
  for (const auto& device : owned) downloaded += device->bytes_to_host();
  EXPECT_GT(downloaded, 0);

  {
    const std::vector<Weights> per_worker =
        TrainOnWorkers(**model, data, {opaque(2), opaque(2)},
                       absl::StrCat("opaque_equivalence/", name));
    for (size_t w = 0; w < per_worker.size(); ++w) {
      ExpectSameWeights(reference, per_worker[w],
                        absl::StrCat("MultiWorkerMirroredStrategy worker ", w,
                                     " of 2, x2 opaque each"));
    }
  }

  ExpectSameWeights(reference,
                    TrainOnParameterServers(**model, data, opaque(2)),
                    "ParameterServerStrategy x2 on opaque memory");
}

// The same training on GPU replicas (every GPU the machine has): the model
// computes with cuBLAS and the kernels, gradients are reduced by NCCL (the
// automatic choice; one rank on a one-GPU machine) or hierarchical copy on
// device memory, and pushed to parameter servers from
// the host once per step. Tagged `gpu` through
// :train_step_gpu_test; skipped where there is no GPU.
TEST_P(StrategyEquivalenceTest, GpuReplicasTrainTheSameWeights) {
  if (const std::string why = MissingGpus(1); !why.empty()) GTEST_SKIP() << why;
  const std::vector<Device*> devices = GpuDevices();
  ASSERT_FALSE(devices.empty());
  ASSERT_EQ(devices[0]->type(), "GPU");
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateModel(ConfigFor(GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<Example> data = MakeData(GetParam(), 7);
  const Weights reference = TrainOnOneCpuDevice(**model, data);
  double loss = 0;

  std::unique_ptr<Strategy> mirrored = *MirroredStrategy::Create(devices);
  EXPECT_THAT(mirrored->Describe(), HasSubstr("nccl"));
  ExpectSameWeights(reference, Train(*mirrored, **model, data, &loss),
                    "MirroredStrategy on GPUs, NCCL", kGpuTolerance);
  EXPECT_TRUE(std::isfinite(loss));

  StrategyOptions hierarchical;
  hierarchical.cross_device_ops = "hierarchical_copy";
  std::unique_ptr<Strategy> copying =
      *MirroredStrategy::Create(devices, hierarchical);
  ExpectSameWeights(reference, Train(*copying, **model, data, &loss),
                    "MirroredStrategy on GPUs, hierarchical copy",
                    kGpuTolerance);

  ExpectSameWeights(reference, TrainOnParameterServers(**model, data, devices),
                    "ParameterServerStrategy on GPUs", kGpuTolerance);
}

// Workers (threads here) of one GPU each, reducing over one NCCL
// communicator across them (--cross_device_ops=nccl). NCCL refuses one GPU
// as two ranks, so this needs two GPUs; on fewer it skips saying so, so that
// a GPU machine's test report tells exactly what ran.
TEST_P(StrategyEquivalenceTest, GpuWorkersReduceOverNcclAcrossWorkers) {
  if (const std::string why = MissingGpus(2); !why.empty()) {
    GTEST_SKIP() << why << " (NCCL refuses one GPU as two ranks)";
  }
  const std::vector<Device*> devices = GpuDevices();
  ASSERT_GE(devices.size(), 2u);
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateModel(ConfigFor(GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<Example> data = MakeData(GetParam(), 7);
  const Weights reference = TrainOnOneCpuDevice(**model, data);

  std::string description;
  StrategyOptions with_nccl;
  with_nccl.cross_device_ops = "nccl";
  const std::vector<Weights> per_worker = TrainOnWorkers(
      **model, data, {{devices[0]}, {devices[1]}},
      absl::StrCat("gpu_nccl_workers/", GetParam()), with_nccl, &description);
  EXPECT_THAT(description, HasSubstr("nccl_multi_worker"));
  for (size_t w = 0; w < per_worker.size(); ++w) {
    ExpectSameWeights(reference, per_worker[w],
                      absl::StrCat("MultiWorkerMirroredStrategy on GPUs, "
                                   "NCCL across workers, worker ",
                                   w),
                      kGpuTolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, StrategyEquivalenceTest,
                         ::testing::Values("linear", "logreg", "mlp",
                                           "wide_deep"));

// InMemoryParameterServers that count the calls made to them, by method
// ("Read", "Update", and "UpdateThenRead" for an Update with then_read),
// and what those carried: "Read.rows", the Reads with rows by id (alone or
// with whole variables); "Read.dense_only", those of whole float32
// variables only; and per kind of item, e.g. "Read.dense", "Read.int64",
// "Update.dense", "Update.sparse", "Update.int64_adds", the items.
class CountingParameterServers : public ParameterServers {
 public:
  explicit CountingParameterServers(
      std::unique_ptr<InMemoryParameterServers> servers)
      : servers_(std::move(servers)) {}
  // Calls of `method`, or items of a kind, so far.
  int64_t calls(const std::string& what) const {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(what);
    return it == calls_.end() ? 0 : it->second;
  }

  // The global step of each Update that pushed to hash tables, in order.
  std::vector<int64_t> hash_global_steps() const {
    absl::MutexLock lock(&mu_);
    return hash_global_steps_;
  }

  int num_ps_tasks() const override { return servers_->num_ps_tasks(); }
  absl::Status WaitForServers(absl::Duration timeout) override {
    return Count("WaitForServers", servers_->WaitForServers(timeout));
  }
  using ParameterServers::CreateVariable;
  absl::StatusOr<VariablePlacement> CreateVariable(
      const CreateVariableRequest& request) override {
    (void)Count("CreateVariable", absl::OkStatus());
    return servers_->CreateVariable(request);
  }
  absl::StatusOr<VariablePlacement> LookupVariable(
      absl::string_view name) override {
    (void)Count("LookupVariable", absl::OkStatus());
    return servers_->LookupVariable(name);
  }
  absl::Status CreateHashTable(const HashEmbeddingSpec& spec) override {
    return Count("CreateHashTable", servers_->CreateHashTable(spec));
  }
  absl::Status Read(const ReadRequest& request) override {
    Tally("Read", request);
    return Count("Read", servers_->Read(request));
  }
  absl::Status Update(const UpdateRequest& request) override {
    if (!request.hash.empty()) {
      absl::MutexLock lock(&mu_);
      hash_global_steps_.push_back(request.global_step);
    }
    Add("Update.dense", request.dense.size());
    Add("Update.sparse", request.sparse.size());
    Add("Update.hash", request.hash.size());
    Add("Update.writes", request.writes.size());
    Add("Update.int64_assigns", request.int64_assigns.size());
    Add("Update.int64_adds", request.int64_adds.size());
    if (request.then_read != nullptr) Tally("Read", *request.then_read);
    return Count(request.then_read != nullptr ? "UpdateThenRead" : "Update",
                 servers_->Update(request));
  }
  absl::StatusOr<CheckpointSaved> Save(const std::string& directory,
                                       int64_t step, int keep_last) override {
    (void)Count("Save", absl::OkStatus());
    return servers_->Save(directory, step, keep_last);
  }
  absl::StatusOr<CheckpointRestored> Restore(
      const std::string& directory) override {
    (void)Count("Restore", absl::OkStatus());
    return servers_->Restore(directory);
  }

 private:
  absl::Status Count(const std::string& method, absl::Status status) {
    Add(method, 1);
    return status;
  }
  void Add(const std::string& what, int64_t n) {
    absl::MutexLock lock(&mu_);
    calls_[what] += n;
  }
  // What `request` carries, under `prefix`.
  void Tally(const std::string& prefix, const ReadRequest& request) {
    Add(prefix + ".dense", request.dense.size());
    Add(prefix + ".sparse", request.sparse.size());
    Add(prefix + ".int64", request.int64.size());
    Add(prefix + ".hash", request.hash.size());
    if (!request.sparse.empty()) Add(prefix + ".rows", 1);
    if (request.sparse.empty() && request.int64.empty() &&
        request.hash.empty() && !request.dense.empty()) {
      Add(prefix + ".dense_only", 1);
    }
  }

  std::unique_ptr<InMemoryParameterServers> servers_;
  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> hash_global_steps_ ABSL_GUARDED_BY(mu_);
};

// `n` CPU devices, without GPUs.
LocalDevices CpuDevices(int n) {
  LocalDevicesOptions options;
  options.num_cpu_devices = n;
  options.use_gpus = false;
  return *CreateLocalDevices(options);
}

// Model `name` on two CPU replicas under ParameterServerStrategy over
// CountingParameterServers with two ps tasks.
struct CountedPsJob {
  explicit CountedPsJob(const std::string& name, int replicas = 2)
      : servers(TwoPsTasks()), local(CpuDevices(replicas)) {
    strategy = *ParameterServerStrategy::Create(local.pointers(), &servers);
    EXPECT_TRUE(strategy->Initialize().ok());
    model = *CreateModel(ConfigFor(name));
    variables.emplace(*ModelVariables::Create(*strategy, *model));
  }
  CountingParameterServers servers;
  LocalDevices local;
  std::unique_ptr<ParameterServerStrategy> strategy;
  std::unique_ptr<Model> model;
  std::optional<ModelVariables> variables;
};

// What the ps transport batches (client/ps_client_strategy_test counts its
// requests per task) the train step must hand it together: each step reads
// every dense variable in one Read and pushes their gradients, with the
// global step's increment, in one Update.
TEST(TrainStepTest, DenseVariablesMoveTogetherOncePerStep) {
  CountedPsJob job("mlp");
  CountingParameterServers& servers = job.servers;
  ParameterServerStrategy* strategy = job.strategy.get();
  Model* model = job.model.get();
  ModelVariables& variables = *job.variables;
  const std::vector<Example> data = MakeData("mlp", 3);
  const std::vector<std::string> counted = {
      "Read",         "Read.dense",    "Read.int64",        "Update",
      "Update.dense", "Update.sparse", "Update.int64_adds", "UpdateThenRead"};
  auto counts = [&] {
    std::map<std::string, int64_t> now;
    for (const std::string& m : counted) now[m] = servers.calls(m);
    return now;
  };

  for (int step = 0; step < 2; ++step) {
    std::map<std::string, int64_t> before = counts();
    absl::StatusOr<StepResult> result =
        TrainStep(*strategy, *model, variables, StepBatches(data, step, 2));
    ASSERT_TRUE(result.ok()) << result.status();
    std::map<std::string, int64_t> after = counts();
    // Replica 0 reads every dense variable for both replicas in one Read;
    // one Update for the gradients and the global step's increment.
    EXPECT_EQ(after["Read"] - before["Read"], 1);
    EXPECT_GT(after["Read.dense"] - before["Read.dense"], 1);
    EXPECT_EQ(after["Update"] - before["Update"], 1);
    EXPECT_GT(after["Update.dense"] - before["Update.dense"], 1);
    EXPECT_EQ(after["Update.int64_adds"] - before["Update.int64_adds"], 1);
    EXPECT_EQ(after["UpdateThenRead"], before["UpdateThenRead"]);
    // The increment brought the new global step back: no read for it.
    EXPECT_EQ(after["Read.int64"], before["Read.int64"]);
    EXPECT_EQ(result->global_step, step + 1);
  }
  EXPECT_EQ(*variables.ReadGlobalStep(*strategy), 2);

  // Evaluation reads the same way.
  std::map<std::string, int64_t> before = counts();
  absl::StatusOr<StepResult> evaluated =
      EvaluateStep(*strategy, *model, variables, StepBatches(data, 2, 2));
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  std::map<std::string, int64_t> after = counts();
  EXPECT_EQ(after["Read"] - before["Read"], 1);
  EXPECT_GT(after["Read.dense"] - before["Read.dense"], 1);
  EXPECT_EQ(after["Update"], before["Update"]);
}

// A model with a row-sparse variable (logreg: its weights; its bias is
// dense) reads both in one Read and updates both in one Update, which the
// ps transport sends in one round each; on two replicas, each reads its
// own rows, and replica 0 pushes the gathered gradients.
TEST(TrainStepTest, DenseAndSparseReadsAndUpdatesGoTogether) {
  CountedPsJob job("logreg");
  CountingParameterServers& servers = job.servers;
  const std::vector<Example> data = MakeData("logreg", 3);
  const std::vector<std::string> counted = {
      "Read.rows",     "Read.sparse",       "Update",
      "Update.sparse", "Update.int64_adds", "UpdateThenRead"};
  std::map<std::string, int64_t> before;
  for (const std::string& m : counted) before[m] = servers.calls(m);
  absl::StatusOr<StepResult> result = TrainStep(
      *job.strategy, *job.model, *job.variables, StepBatches(data, 0, 2));
  ASSERT_TRUE(result.ok()) << result.status();
  // The bias is shared: replica 0 reads it for both (a Read of it alone,
  // in its MergeCall); each replica reads its rows in a Read of its own.
  EXPECT_EQ(servers.calls("Read.rows") - before["Read.rows"], 2);
  EXPECT_EQ(servers.calls("Read.sparse") - before["Read.sparse"], 2);
  // One Update: the gathered rows' gradients, the bias's and the add.
  EXPECT_EQ(servers.calls("Update") - before["Update"], 1);
  EXPECT_EQ(servers.calls("Update.sparse") - before["Update.sparse"], 1);
  EXPECT_EQ(servers.calls("Update.int64_adds") - before["Update.int64_adds"],
            1);
  EXPECT_EQ(servers.calls("UpdateThenRead"), before["UpdateThenRead"]);
  EXPECT_LT(result->mean_loss(), 1.0);
}

// The hash tables' pushes (wide_deep's embedding) carry the global step
// the caller knows before the step, by which the tables age their rows: one
// Update each, from replica 0; -1 where the caller does not say.
TEST(TrainStepTest, HashTablePushesCarryTheGlobalStep) {
  CountedPsJob job("wide_deep");
  const std::vector<Example> data = MakeData("wide_deep", 3);
  absl::StatusOr<StepResult> result =
      TrainStep(*job.strategy, *job.model, *job.variables,
                StepBatches(data, 0, 2), /*read_ahead=*/nullptr,
                /*next_batches=*/{}, /*global_step=*/41);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(job.servers.hash_global_steps(), ElementsAre(41));
  result = TrainStep(*job.strategy, *job.model, *job.variables,
                     StepBatches(data, 1, 2));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(job.servers.hash_global_steps(), ElementsAre(41, -1));
}

TEST(TrainStepTest, ABadBatchIsAnErrorNotAHang) {
  LocalDevices local = CpuDevices(3);
  std::unique_ptr<Strategy> strategy =
      *MirroredStrategy::Create(local.pointers());
  std::unique_ptr<Model> model = *CreateModel(ConfigFor("logreg"));
  ModelVariables variables = *ModelVariables::Create(*strategy, *model);
  std::vector<Example> data = MakeData("logreg", 1);
  std::vector<Batch> batches = StepBatches(data, 0, 3);
  // Replica 1's batch names a feature beyond the model's.
  batches[1].ids[0] = kSparseFeatures + 5;
  absl::StatusOr<StepResult> result =
      TrainStep(*strategy, *model, variables, batches);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("45"));
  // Nothing was applied, not even the global step.
  EXPECT_EQ(*variables.ReadGlobalStep(*strategy), 0);

  batches.pop_back();
  EXPECT_EQ(TrainStep(*strategy, *model, variables, batches).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// With read-ahead, each step's reads go out during the step before, beside
// its push: the first step reads as usual (each replica its own, no shared
// read), every later one takes what was read for it.
TEST(TrainStepTest, ReadAheadReadsTheNextStepDuringThisOne) {
  CountedPsJob job("logreg");
  CountingParameterServers& servers = job.servers;
  const std::vector<Example> data = MakeData("logreg", 3);
  ReadAhead read_ahead(2);
  constexpr int kSteps = 3;
  const int64_t row_reads = servers.calls("Read.rows");
  const int64_t dense_reads = servers.calls("Read.dense_only");
  for (int step = 0; step < kSteps; ++step) {
    std::vector<Batch> next;
    if (step + 1 < kSteps) next = StepBatches(data, step + 1, 2);
    absl::StatusOr<StepResult> result =
        TrainStep(*job.strategy, *job.model, *job.variables,
                  StepBatches(data, step, 2), &read_ahead, next);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->global_step, step + 1);
    EXPECT_LT(result->mean_loss(), 1.0);
  }
  EXPECT_EQ(read_ahead.num_taken(), 2 * (kSteps - 1));
  EXPECT_EQ(read_ahead.num_dropped(), 0);
  // One read per replica per step: the first step's, then the read-aheads.
  EXPECT_EQ(servers.calls("Read.rows") - row_reads, 2 * kSteps);
  // No replica read the shared bias for both (a Read of it alone in a
  // MergeCall).
  EXPECT_EQ(servers.calls("Read.dense_only"), dense_reads);
  EXPECT_EQ(*job.variables->ReadGlobalStep(*job.strategy), kSteps);
}

// With one replica, the next step's reads go with this step's updates, in
// one Update with then_read: after the first step's own read, one round
// per step.
// Made after the updates, they see them: every step computes what a twin
// job without read-ahead computes.
TEST(TrainStepTest, OneReplicaReadsTheNextStepWithThisStepsUpdates) {
  CountedPsJob ahead("logreg", 1), plain("logreg", 1);
  const std::vector<Example> data = MakeData("logreg", 3);
  ReadAhead read_ahead(1);
  constexpr int kSteps = 3;
  const int64_t row_reads = ahead.servers.calls("Read.rows");
  const int64_t updates = ahead.servers.calls("Update");
  for (int step = 0; step < kSteps; ++step) {
    std::vector<Batch> next;
    if (step + 1 < kSteps) next = StepBatches(data, step + 1, 1);
    absl::StatusOr<StepResult> result =
        TrainStep(*ahead.strategy, *ahead.model, *ahead.variables,
                  StepBatches(data, step, 1), &read_ahead, next);
    absl::StatusOr<StepResult> expected =
        TrainStep(*plain.strategy, *plain.model, *plain.variables,
                  StepBatches(data, step, 1));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_EQ(result->global_step, step + 1);
    EXPECT_EQ(result->predictions, expected->predictions) << "step " << step;
    EXPECT_EQ(result->loss_sum, expected->loss_sum) << "step " << step;
  }
  EXPECT_EQ(read_ahead.num_taken(), kSteps - 1);
  EXPECT_EQ(read_ahead.num_dropped(), 0);
  // The first step reads alone; the last one, with no next batch, pushes
  // alone.
  EXPECT_EQ(ahead.servers.calls("Read.rows") - row_reads, 1 + (kSteps - 1));
  EXPECT_EQ(ahead.servers.calls("UpdateThenRead"), kSteps - 1);
  EXPECT_EQ(ahead.servers.calls("Update") - updates, 1);
  EXPECT_EQ(*ahead.variables->ReadGlobalStep(*ahead.strategy), kSteps);
}

// A read-ahead of other batches than the step gets is dropped, and the
// step computes as without read-ahead: the same predictions as a twin job
// trained without it.
TEST(TrainStepTest, ReadAheadOfOtherBatchesIsDropped) {
  CountedPsJob sparse_ahead("logreg"), sparse_plain("logreg");
  const std::vector<Example> sparse = MakeData("logreg", 3);
  ReadAhead sparse_read_ahead(2);
  ASSERT_TRUE(TrainStep(*sparse_ahead.strategy, *sparse_ahead.model,
                        *sparse_ahead.variables, StepBatches(sparse, 0, 2),
                        &sparse_read_ahead, StepBatches(sparse, 1, 2))
                  .ok());
  ASSERT_TRUE(TrainStep(*sparse_plain.strategy, *sparse_plain.model,
                        *sparse_plain.variables, StepBatches(sparse, 0, 2))
                  .ok());
  // Step 2's batches, not step 1's: other ids.
  absl::StatusOr<StepResult> dropped = TrainStep(
      *sparse_ahead.strategy, *sparse_ahead.model, *sparse_ahead.variables,
      StepBatches(sparse, 2, 2), &sparse_read_ahead, {});
  absl::StatusOr<StepResult> expected =
      TrainStep(*sparse_plain.strategy, *sparse_plain.model,
                *sparse_plain.variables, StepBatches(sparse, 2, 2));
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(sparse_read_ahead.num_taken(), 0);
  EXPECT_EQ(sparse_read_ahead.num_dropped(), 2);
  EXPECT_EQ(dropped->predictions, expected->predictions);
  EXPECT_EQ(dropped->loss_sum, expected->loss_sum);
}

TEST(TrainStepTest, ReadAheadNeedsParameterServers) {
  LocalDevices local = CpuDevices(2);
  std::unique_ptr<Strategy> strategy =
      *MirroredStrategy::Create(local.pointers());
  std::unique_ptr<Model> model = *CreateModel(ConfigFor("logreg"));
  ModelVariables variables = *ModelVariables::Create(*strategy, *model);
  const std::vector<Example> data = MakeData("logreg", 1);
  ReadAhead read_ahead(2);
  absl::StatusOr<StepResult> result =
      TrainStep(*strategy, *model, variables, StepBatches(data, 0, 2),
                &read_ahead, StepBatches(data, 1, 2));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("ParameterServerStrategy"));
  EXPECT_THAT(result.status().message(), HasSubstr("MirroredStrategy"));
  EXPECT_EQ(*variables.ReadGlobalStep(*strategy), 0);

  // One slot per replica.
  CountedPsJob job("logreg");
  ReadAhead one(1);
  result = TrainStep(*job.strategy, *job.model, *job.variables,
                     StepBatches(data, 0, 2), &one, {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
