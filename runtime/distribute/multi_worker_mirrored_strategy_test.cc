// MultiWorkerMirroredStrategy with workers as threads, each with its own
// devices and GlooGroup over one in-memory rendezvous store (processes in a
// job; tests/multi_worker_training_test runs those).

#include "runtime/distribute/multi_worker_mirrored_strategy.h"

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/collective/kv_store.h"
#include "runtime/collective/test_group_prefix.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// Runs body(strategy) on `replicas.size()` worker threads; worker w has
// replicas[w] CPU replicas. Returns each worker's status.
std::vector<absl::Status> RunWorkers(
    const std::vector<int>& replicas,
    const std::function<absl::Status(MultiWorkerMirroredStrategy&)>& body) {
  InMemoryKvStore store;
  const std::string prefix = UniqueGroupPrefix();
  const int n = static_cast<int>(replicas.size());
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int w = 0; w < n; ++w) {
    threads.emplace_back([&, w] {
      LocalDevicesOptions device_options;
      device_options.num_cpu_devices = replicas[w];
      device_options.use_gpus = false;
      absl::StatusOr<LocalDevices> devices = CreateLocalDevices(device_options);
      if (!devices.ok()) {
        statuses[w] = devices.status();
        return;
      }
      GlooGroup::Options options;
      options.rank = w;
      options.size = n;
      options.prefix = prefix;
      options.timeout = absl::Seconds(20);
      absl::StatusOr<std::unique_ptr<GlooGroup>> group =
          GlooGroup::Create(&store, options);
      if (!group.ok()) {
        statuses[w] = group.status();
        return;
      }
      absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> strategy =
          MultiWorkerMirroredStrategy::Create(devices->pointers(),
                                              group->get());
      if (!strategy.ok()) {
        statuses[w] = strategy.status();
        return;
      }
      statuses[w] = body(**strategy);
    });
  }
  for (std::thread& t : threads) t.join();
  return statuses;
}

TEST(MultiWorkerMirroredStrategyTest, DescribesItsWorkerAndTheGlobalReplicas) {
  std::vector<std::string> descriptions(2);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        descriptions[strategy.worker_rank()] = strategy.Describe();
        EXPECT_EQ(strategy.num_workers(), 2);
        EXPECT_EQ(strategy.num_local_replicas(), 2);
        EXPECT_EQ(strategy.num_replicas_in_sync(), 4);
        return strategy.Initialize();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  EXPECT_THAT(descriptions[1], HasSubstr("worker 1 of 2"));
  EXPECT_THAT(descriptions[1], HasSubstr("4 in sync over all workers"));
}

// TF's reduce(MEAN, per_example_losses, axis=0) over workers: divided by
// every worker's examples, not by the replicas.
TEST(MultiWorkerMirroredStrategyTest, ReduceAlongAnAxisCountsEveryWorker) {
  // Worker 0's replicas have losses {1, 2} and {3}; worker 1's {4, 5, 6}
  // and {9}: 30 over 7 examples.
  const std::vector<std::vector<std::vector<float>>> losses = {
      {{1, 2}, {3}}, {{4, 5, 6}, {9}}};
  std::vector<float> means(2, -1);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        RETURN_IF_ERROR(strategy.Initialize());
        std::vector<Tensor> mine;
        for (const std::vector<float>& replica :
             losses[strategy.worker_rank()]) {
          ASSIGN_OR_RETURN(
              Tensor t, Tensor::FromFloats(
                            replica, {static_cast<int64_t>(replica.size())}));
          mine.push_back(std::move(t));
        }
        ASSIGN_OR_RETURN(Tensor mean,
                         strategy.Reduce(ReduceOp::kMean,
                                         PerReplica<Tensor>(std::move(mine)),
                                         /*axis=*/0));
        means[strategy.worker_rank()] = mean.flat<float>()[0];
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  EXPECT_THAT(means, ::testing::Each(::testing::FloatEq(30.0f / 7)));
}

// As in TF: replica ids and counts span every worker; the local ones index
// this process's replicas.
TEST(MultiWorkerMirroredStrategyTest, ReplicaIdsAreGlobalAcrossWorkers) {
  absl::Mutex mutex;
  std::vector<std::vector<int>> ids(2, std::vector<int>(2, -1));
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        RETURN_IF_ERROR(strategy.Initialize());
        return strategy.Run([&](ReplicaContext& context) -> absl::Status {
          EXPECT_EQ(context.num_replicas_in_sync(), 4);
          EXPECT_EQ(context.num_local_replicas(), 2);
          absl::MutexLock lock(&mutex);
          ids[strategy.worker_rank()][context.local_replica_id()] =
              context.replica_id_in_sync_group();
          return absl::OkStatus();
        });
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(ids[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(ids[1], (std::vector<int>{2, 3}));
}

// The strategy's InputContext splits the global batch over every replica
// of every worker, one input pipeline per worker.
TEST(MultiWorkerMirroredStrategyTest, InputContextCountsEveryWorkersReplicas) {
  std::vector<InputContext> contexts(3);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        contexts[strategy.worker_rank()] = strategy.input_context();
        // A collective before leaving: a worker that closed its group at
        // once could cut the others' mesh while they still connect.
        return strategy.Initialize();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(contexts[w].num_input_pipelines, 3);
    EXPECT_EQ(contexts[w].input_pipeline_id, w);
    EXPECT_EQ(contexts[w].num_replicas_in_sync, 6);
    absl::StatusOr<int64_t> per_replica =
        contexts[w].GetPerReplicaBatchSize(96);
    ASSERT_TRUE(per_replica.ok()) << per_replica.status();
    EXPECT_EQ(*per_replica, 16);
  }
}

// An int64 SUM counter, added to by every replica of every worker, holds
// the same total on every worker (not each worker's own sum).
TEST(MultiWorkerMirroredStrategyTest, Int64SumVariablesAgreeAcrossWorkers) {
  std::vector<int64_t> totals(2, -1);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        RETURN_IF_ERROR(strategy.Initialize());
        VariableOptions options;
        options.spec.name = "examples_seen";
        options.spec.dtype = DType::kInt64;
        options.aggregation = VariableAggregation::kSum;
        ASSIGN_OR_RETURN(DistributedVariable * counter,
                         strategy.CreateVariable(options));
        for (int step = 0; step < 2; ++step) {
          RETURN_IF_ERROR(
              strategy.Run([&](ReplicaContext& context) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor delta,
                                 Tensor::Create(DType::kInt64, {}));
                delta.flat<int64_t>()[0] =
                    context.replica_id_in_sync_group() + 1;
                return context.AssignAdd(*counter, std::move(delta));
              }));
        }
        // Every copy, not just the first, has the total.
        for (int c = 0; c < counter->num_copies(); ++c) {
          ASSIGN_OR_RETURN(Tensor copy, counter->ReadCopy(c));
          EXPECT_EQ(copy.flat<int64_t>()[0], 20) << "copy " << c;
        }
        ASSIGN_OR_RETURN(Tensor value, strategy.ReadVar(*counter));
        totals[strategy.worker_rank()] = value.flat<int64_t>()[0];
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  // Two steps of 1 + 2 + 3 + 4.
  EXPECT_EQ(totals, (std::vector<int64_t>{20, 20}));
}

// int64 all-reduce and Reduce span every worker, exactly.
TEST(MultiWorkerMirroredStrategyTest, Int64ReductionsSpanEveryWorker) {
  std::vector<int64_t> reduced(2, -1), all_reduced(2, -1);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        RETURN_IF_ERROR(strategy.Initialize());
        ASSIGN_OR_RETURN(
            PerReplica<Tensor> ids,
            strategy.RunWithResults(
                [&](ReplicaContext& context) -> absl::StatusOr<Tensor> {
                  ASSIGN_OR_RETURN(Tensor value,
                                   Tensor::Create(DType::kInt64, {1}));
                  value.flat<int64_t>()[0] =
                      (int64_t{1} << 40) + context.replica_id_in_sync_group();
                  ASSIGN_OR_RETURN(Tensor copy, value.Clone());
                  RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, value));
                  if (context.local_replica_id() == 0) {
                    all_reduced[strategy.worker_rank()] =
                        value.flat<int64_t>()[0];
                  }
                  return copy;
                }));
        ASSIGN_OR_RETURN(Tensor sum, strategy.Reduce(ReduceOp::kSum, ids));
        reduced[strategy.worker_rank()] = sum.flat<int64_t>()[0];
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  // 4 * 2^40 + (0 + 1 + 2 + 3), beyond float's exact integers.
  const int64_t want = 4 * (int64_t{1} << 40) + 6;
  EXPECT_EQ(reduced, (std::vector<int64_t>{want, want}));
  EXPECT_EQ(all_reduced, (std::vector<int64_t>{want, want}));
}

// float64 all-reduce and Reduce span every worker in double precision.
TEST(MultiWorkerMirroredStrategyTest, Float64ReductionsSpanEveryWorker) {
  std::vector<double> reduced(2, -1), all_reduced(2, -1);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        RETURN_IF_ERROR(strategy.Initialize());
        ASSIGN_OR_RETURN(
            PerReplica<Tensor> values,
            strategy.RunWithResults(
                [&](ReplicaContext& context) -> absl::StatusOr<Tensor> {
                  const double mine =
                      1.0 + 1e-12 * context.replica_id_in_sync_group();
                  ASSIGN_OR_RETURN(Tensor value,
                                   Tensor::FromValues<double>({mine}, {1}));
                  ASSIGN_OR_RETURN(Tensor copy, value.Clone());
                  RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, value));
                  if (context.local_replica_id() == 0) {
                    all_reduced[strategy.worker_rank()] =
                        value.flat<double>()[0];
                  }
                  return copy;
                }));
        ASSIGN_OR_RETURN(Tensor sum, strategy.Reduce(ReduceOp::kSum, values));
        reduced[strategy.worker_rank()] = sum.flat<double>()[0];
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  // 4 + 1e-12 * (0 + 1 + 2 + 3): below float32's resolution at 4.
  for (int w = 0; w < 2; ++w) {
    EXPECT_NEAR(reduced[w], 4 + 6e-12, 1e-14) << "worker " << w;
    EXPECT_NEAR(all_reduced[w], 4 + 6e-12, 1e-14) << "worker " << w;
  }
}

// Reading a sync-on-read variable (a metric) combines every worker's copies.
TEST(MultiWorkerMirroredStrategyTest, SyncOnReadVariablesCombineAcrossWorkers) {
  std::vector<std::vector<float>> read(2);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        RETURN_IF_ERROR(strategy.Initialize());
        std::vector<DistributedVariable*> variables;
        for (VariableAggregation aggregation :
             {VariableAggregation::kSum, VariableAggregation::kMean}) {
          VariableOptions options;
          options.spec.name =
              absl::StrCat("metric_", VariableAggregationName(aggregation));
          options.spec.shape = {2};
          options.synchronization = VariableSynchronization::kOnRead;
          options.aggregation = aggregation;
          ASSIGN_OR_RETURN(DistributedVariable * made,
                           strategy.CreateVariable(options));
          variables.push_back(made);
        }
        RETURN_IF_ERROR(
            strategy.Run([&](ReplicaContext& context) -> absl::Status {
              const float id = context.replica_id_in_sync_group();
              for (DistributedVariable* variable : variables) {
                ASSIGN_OR_RETURN(Tensor delta,
                                 Tensor::FromFloats({id, 10 * id}, {2}));
                RETURN_IF_ERROR(context.AssignAdd(*variable, std::move(delta)));
              }
              return absl::OkStatus();
            }));
        for (DistributedVariable* variable : variables) {
          ASSIGN_OR_RETURN(Tensor value, strategy.ReadVar(*variable));
          for (float v : value.flat<float>()) {
            read[strategy.worker_rank()].push_back(v);
          }
        }
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  // SUM of ids 0..3 = 6 (and 60); MEAN = 1.5 (and 15), on both workers.
  const std::vector<float> want = {6, 60, 1.5f, 15};
  EXPECT_EQ(read[0], want);
  EXPECT_EQ(read[1], want);
}

TEST(MultiWorkerMirroredStrategyTest, DifferentReplicaCountsAreRefusedByAll) {
  std::vector<absl::Status> statuses =
      RunWorkers({2, 1, 2}, [](MultiWorkerMirroredStrategy& strategy) {
        return strategy.Initialize();
      });
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(s.message(), HasSubstr("worker 1: 1"));
  }
}

TEST(MultiWorkerMirroredStrategyTest, AllReduceSumsEveryReplicaOfEveryWorker) {
  constexpr int kWorkers = 3;
  constexpr int kReplicas = 2;
  std::vector<absl::Status> statuses = RunWorkers(
      std::vector<int>(kWorkers, kReplicas),
      [&](MultiWorkerMirroredStrategy& strategy) {
        RETURN_IF_ERROR(strategy.Initialize());
        return strategy.Run([&](ReplicaContext& context) -> absl::Status {
          const int global = context.replica_id_in_sync_group();
          ASSIGN_OR_RETURN(Tensor value, Tensor::Create(DType::kFloat32, {3}));
          for (int i = 0; i < 3; ++i) {
            value.flat<float>()[i] = static_cast<float>((global + 1) * (i + 1));
          }
          RETURN_IF_ERROR(context.AllReduce(ReduceOp::kMean, value));
          // Mean of 1..6 is 3.5, times i + 1.
          for (int i = 0; i < 3; ++i) {
            if (value.flat<float>()[i] != 3.5f * (i + 1)) {
              return absl::InternalError(absl::StrCat("replica ", global,
                                                      " element ", i, ": ",
                                                      value.flat<float>()[i]));
            }
          }
          return absl::OkStatus();
        });
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
}

TEST(MultiWorkerMirroredStrategyTest, SparseGradientsAreGatheredInWorkerOrder) {
  constexpr int kWorkers = 3;
  constexpr int kWidth = 3;  // odd: rows of an odd count pad their last word
  std::vector<SparseGradient> gathered(kWorkers);
  std::vector<absl::Status> statuses =
      RunWorkers({2, 2, 2}, [&](MultiWorkerMirroredStrategy& strategy) {
        return strategy.Run([&](ReplicaContext& context) -> absl::Status {
          const int global = context.replica_id_in_sync_group();
          SparseGradient mine;
          // Replica g >= 2 gives g rows; worker 0's replicas give none, so
          // it learns the rows' width from the others' parts.
          for (int k = 0; global >= 2 && k < global; ++k) {
            const int64_t id = global * 10 + k;
            mine.ids.push_back(id);
            for (int j = 0; j < kWidth; ++j) {
              mine.rows.push_back(static_cast<float>(id) + 0.25f * j);
            }
          }
          ASSIGN_OR_RETURN(std::shared_ptr<const SparseGradient> all,
                           context.AllGather(std::move(mine)));
          if (context.local_replica_id() == 0) {
            gathered[strategy.worker_rank()] = *all;
          }
          return absl::OkStatus();
        });
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  const std::vector<int64_t> want_ids = {20, 21, 30, 31, 32, 40, 41,
                                         42, 43, 50, 51, 52, 53, 54};
  std::vector<float> want_rows;
  for (int64_t id : want_ids) {
    for (int j = 0; j < kWidth; ++j) {
      want_rows.push_back(static_cast<float>(id) + 0.25f * j);
    }
  }
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(gathered[w].ids, want_ids) << w;
    EXPECT_EQ(gathered[w].rows, want_rows) << w;
  }
}

TEST(MultiWorkerMirroredStrategyTest, ALostWorkerFailsTheOthersStep) {
  // Worker 2 leaves only once the others are connected, so that what fails
  // is their step and not their group's set-up.
  absl::Mutex mutex;
  int connected = 0;
  std::vector<absl::Status> statuses =
      RunWorkers({1, 1, 1}, [&](MultiWorkerMirroredStrategy& strategy) {
        if (strategy.worker_rank() == 2) {
          // It leaves: its group (and connections) close on return.
          absl::MutexLock lock(&mutex);
          const auto others_connected = [&] { return connected == 2; };
          if (!mutex.AwaitWithTimeout(absl::Condition(&others_connected),
                                      absl::Seconds(20))) {
            return absl::DeadlineExceededError("the others did not connect");
          }
          return absl::OkStatus();
        }
        {
          absl::MutexLock lock(&mutex);
          ++connected;
        }
        return strategy.Run([&](ReplicaContext& context) -> absl::Status {
          ASSIGN_OR_RETURN(Tensor value, Tensor::Create(DType::kFloat32, {4}));
          return context.AllReduce(ReduceOp::kSum, value);
        });
      });
  EXPECT_TRUE(statuses[2].ok()) << statuses[2];
  for (int w = 0; w < 2; ++w) {
    EXPECT_FALSE(statuses[w].ok()) << w;
    EXPECT_THAT(statuses[w].message(), HasSubstr("all-reduce")) << statuses[w];
  }
}

}  // namespace
}  // namespace distrt
