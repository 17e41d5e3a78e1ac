// ParameterServerStrategy against two parameter servers running in this
// process, reached over gRPC on 127.0.0.1 through PsClient: what the wire
// carries (requests per step) and what a worker says when it cannot reach
// them. runtime/distribute's own test covers the semantics.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/in_process_ps_tasks.h"
#include "runtime/distribute/concurrent_updates.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/distribute/test_variable_options.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

class PsClientStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<rpc::InProcessPsTasks> tasks = rpc::StartInProcessPsTasks(2);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    ps_ = *std::move(tasks);
    LocalDevicesOptions options;
    options.num_cpu_devices = 3;
    options.use_gpus = false;
    devices_ = *CreateLocalDevices(options);
  }
  void TearDown() override {
    for (auto& server : ps_.servers) server->Stop();
  }

  // A worker: its own client and strategy over the shared servers.
  std::unique_ptr<ParameterServerStrategy> Worker(
      std::unique_ptr<PsClient>* client) {
    *client = *PsClient::Create(ps_.addresses, PsClient::Options());
    auto strategy =
        *ParameterServerStrategy::Create(devices_.pointers(), client->get());
    EXPECT_TRUE(strategy->Initialize().ok());
    return strategy;
  }

  rpc::InProcessPsTasks ps_;
  LocalDevices devices_;
};

// Requests of `method` (e.g. "PullDense") each ps task has served.
std::vector<int64_t> Requests(PsClient& client, const std::string& method) {
  absl::StatusOr<std::vector<ps::GetStatusResponse>> stats = client.Stats();
  EXPECT_TRUE(stats.ok()) << stats.status();
  if (!stats.ok()) return {};
  return rpc::RequestsPerTask(*stats, method);
}

// Requests of `methods` each task served since `before` (by method).
std::vector<int64_t> Served(PsClient& client,
                            const std::vector<std::string>& methods,
                            const std::vector<std::vector<int64_t>>& before) {
  std::vector<int64_t> served(before[0].size());
  for (size_t m = 0; m < methods.size(); ++m) {
    std::vector<int64_t> now = Requests(client, methods[m]);
    for (size_t t = 0; t < served.size() && t < now.size(); ++t) {
      served[t] += now[t] - before[m][t];
    }
  }
  return served;
}

std::vector<float> Floats(const Tensor& t) {
  auto flat = t.flat<float>();
  return std::vector<float>(flat.begin(), flat.end());
}

TEST_F(PsClientStrategyTest, SmallVariablesTravelTogether) {
  std::unique_ptr<PsClient> client;
  auto strategy = Worker(&client);  // 3 replicas
  // Per set: six small variables, round-robin over the two tasks, and one
  // of 150 KiB in two parts, each above PsClient's batching threshold.
  auto make = [&](const std::string& prefix) {
    std::vector<DistributedVariable*> made;
    for (int i = 0; i < 6; ++i) {
      made.push_back(*strategy->CreateVariable(
          SumVariable(absl::StrCat(prefix, "/small", i), {i + 1, 2})));
    }
    VariableOptions large =
        SumVariable(absl::StrCat(prefix, "/large"), {300, 128});
    large.partition = PartitionPolicy::FixedShards(2);
    made.push_back(*strategy->CreateVariable(large));
    return made;
  };
  std::vector<DistributedVariable*> batched = make("batched");
  std::vector<DistributedVariable*> single = make("single");
  DistributedVariable* step = *strategy->CreateVariable(GlobalStepVariable());
  std::vector<std::vector<float>> grads;
  for (size_t i = 0; i < batched.size(); ++i) {
    std::vector<float>& g = grads.emplace_back();
    const int64_t n = batched[i]->ReadCopy(0)->num_elements();
    for (int64_t k = 0; k < n; ++k) g.push_back((i + 1) + 0.001f * (k % 97));
  }
  const std::vector<absl::Span<const float>> grad_spans(grads.begin(),
                                                        grads.end());

  // Replica 0 reads all of `batched` and the (int64) global step at once.
  const std::vector<std::string> pulls = {"PullDense", "PullDenseBatch"};
  const std::vector<std::vector<int64_t>> pulls_before = {
      Requests(*client, pulls[0]), Requests(*client, pulls[1])};
  std::vector<const DistributedVariable*> to_read(batched.begin(),
                                                  batched.end());
  to_read.push_back(step);
  std::vector<Tensor> read;
  ASSERT_TRUE(strategy
                  ->Run([&](ReplicaContext& context) -> absl::Status {
                    if (context.replica_id_in_sync_group() != 0) {
                      return absl::OkStatus();
                    }
                    ASSIGN_OR_RETURN(std::vector<Tensor> values,
                                     context.ReadMany(to_read));
                    read = std::move(values);
                    return absl::OkStatus();
                  })
                  .ok());
  // On each task, one request for its small variables and one for its part
  // of the large one, and on one task one for the global step: five in all
  // (one at a time: nine).
  int64_t pulled = 0;
  for (int64_t served : Served(*client, pulls, pulls_before)) {
    EXPECT_LE(served, 3);
    pulled += served;
  }
  EXPECT_EQ(pulled, 5);
  ASSERT_EQ(read.size(), to_read.size());
  for (size_t i = 0; i < batched.size(); ++i) {
    EXPECT_EQ(read[i].shape(), batched[i]->spec().shape);
    for (float v : Floats(read[i])) EXPECT_EQ(v, 0.0f);  // zeros initially
  }
  EXPECT_EQ(read.back().flat<int64_t>()[0], 0);

  // Every replica applies the same gradients; one pushes, once.
  const std::vector<std::string> pushes = {"PushDense", "PushDenseBatch"};
  const std::vector<std::vector<int64_t>> pushes_before = {
      Requests(*client, pushes[0]), Requests(*client, pushes[1])};
  ASSERT_TRUE(strategy
                  ->Run([&](ReplicaContext& context) {
                    return context.ApplyGradients(
                        batched, grad_spans, {}, nullptr,
                        GradientAggregation::kAlreadyAggregated);
                  })
                  .ok());
  // Two per task, as for the reads (one at a time: eight, and with every
  // replica pushing three times as many).
  for (int64_t served : Served(*client, pushes, pushes_before)) {
    EXPECT_EQ(served, 2);
  }
  ASSERT_TRUE(strategy
                  ->Run([&](ReplicaContext& context) -> absl::Status {
                    for (size_t i = 0; i < single.size(); ++i) {
                      RETURN_IF_ERROR(context.ApplyGradient(
                          *single[i], grad_spans[i],
                          GradientAggregation::kAlreadyAggregated));
                    }
                    return absl::OkStatus();
                  })
                  .ok());

  // The same values as one variable at a time, on every replica: SGD with
  // learning rate 0.01 from zeros, applied once.
  absl::Status compared =
      strategy->Run([&](ReplicaContext& context) -> absl::Status {
        ASSIGN_OR_RETURN(
            std::vector<Tensor> values,
            context.ReadMany(std::vector<const DistributedVariable*>(
                batched.begin(), batched.end())));
        for (size_t i = 0; i < single.size(); ++i) {
          ASSIGN_OR_RETURN(Tensor one, context.Read(*single[i]));
          if (Floats((values)[i]) != Floats(one)) {
            return absl::InternalError(absl::StrCat(
                batched[i]->name(), " differs from ", single[i]->name()));
          }
        }
        return absl::OkStatus();
      });
  ASSERT_TRUE(compared.ok()) << compared;
  for (size_t i = 0; i < batched.size(); ++i) {
    std::vector<float> got = Floats(*strategy->ReadVar(*batched[i]));
    ASSERT_EQ(got.size(), grads[i].size());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_FLOAT_EQ(got[k], -0.01f * grads[i][k])
          << batched[i]->name() << "[" << k << "]";
    }
  }
}

// Over gRPC too, AssignAdd / AssignSub from one worker and gradients from
// another reach the same variable at once and none is lost; Assign
// replaces values on the servers, and Update, which could lose pushes, is
// refused.
TEST_F(PsClientStrategyTest, AssignAddIsExactUnderConcurrentPushes) {
  std::unique_ptr<PsClient> client_a, client_b;
  auto worker_a = Worker(&client_a);
  auto worker_b = Worker(&client_b);
  absl::StatusOr<std::vector<float>> values =
      AddWhilePushing(*worker_a, *worker_b, /*adds=*/100, /*pushes=*/150);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, std::vector<float>(20, 2 * 100 - 150));

  DistributedVariable* shared =
      *worker_b->CreateVariable(SumVariable("shared", {10, 2}));
  std::vector<float> fives(20, 5.0f);
  ASSERT_TRUE(
      worker_b->Assign(*shared, *Tensor::FromFloats(fives, {10, 2})).ok());
  EXPECT_EQ(Floats(*worker_a->ReadVar(*shared)), std::vector<float>(20, 5));
  absl::Status update = worker_b->Update(*shared, [](Tensor& value) {
    for (float& v : value.flat<float>()) v *= 2;
    return absl::OkStatus();
  });
  EXPECT_EQ(update.code(), absl::StatusCode::kFailedPrecondition) << update;
  EXPECT_THAT(update.message(), HasSubstr("AssignAdd"));
  EXPECT_EQ(Floats(*worker_a->ReadVar(*shared)), std::vector<float>(20, 5));
}

TEST_F(PsClientStrategyTest, UnreachableServersAreAClearError) {
  auto client = *PsClient::Create({"127.0.0.1:1"}, PsClient::Options());
  std::vector<Device*> devices = {devices_.devices[0].get()};
  auto strategy = *ParameterServerStrategy::Create(
      devices, client.get(), StrategyOptions(), absl::Milliseconds(300));
  absl::Status s = strategy->Initialize();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("127.0.0.1:1"));
}

}  // namespace
}  // namespace distrt
