#include "runtime/distribute/multi_worker_all_reduce.h"

#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/collective/kv_store.h"
#include "runtime/distribute/cpu_chunked_all_reduce.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/local_devices/local_devices.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// Worker w's replica r's value at index i; exact in float32 when summed.
float ValueOf(int worker, int replica, int64_t i) {
  return static_cast<float>((worker * 7 + replica * 3) % 11) - 5.0f +
         static_cast<float>(i % 17) * 0.25f;
}

// One worker of the test: its devices, its replicas' group, its rank.
struct TestWorker {
  LocalDevices devices;
  std::unique_ptr<ReplicaGroup> group;
  std::unique_ptr<GlooGroup> gloo;
  std::unique_ptr<MultiWorkerAllReduce> ops;
};

// `num_workers` workers (threads here; processes in a job) of
// `replicas_per_worker` CPU replicas each, connected through one store.
std::vector<std::unique_ptr<TestWorker>> MakeWorkers(
    InMemoryKvStore& store, int num_workers, int replicas_per_worker,
    int64_t bucket_bytes, const std::string& prefix) {
  std::vector<std::unique_ptr<TestWorker>> workers;
  for (int w = 0; w < num_workers; ++w) {
    workers.push_back(std::make_unique<TestWorker>());
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < num_workers; ++w) {
    threads.emplace_back([&, w] {
      LocalDevicesOptions options;
      options.num_cpu_devices = replicas_per_worker;
      options.use_gpus = false;
      workers[w]->devices = *CreateLocalDevices(options);
      workers[w]->group = std::make_unique<ReplicaGroup>(
          workers[w]->devices.pointers(), absl::Minutes(1));
      GlooGroup::Options gloo_options;
      gloo_options.rank = w;
      gloo_options.size = num_workers;
      gloo_options.timeout = absl::Seconds(5);
      gloo_options.prefix = prefix;
      absl::StatusOr<std::unique_ptr<GlooGroup>> gloo =
          GlooGroup::Create(&store, gloo_options);
      ASSERT_TRUE(gloo.ok()) << gloo.status();
      workers[w]->gloo = *std::move(gloo);
      workers[w]->ops = std::make_unique<MultiWorkerAllReduce>(
          std::make_unique<CpuChunkedAllReduce>(), workers[w]->gloo.get(),
          replicas_per_worker, bucket_bytes);
    });
  }
  for (std::thread& t : threads) t.join();
  return workers;
}

TEST(MultiWorkerAllReduceTest, SumsAndAveragesOverEveryReplicaOfEveryWorker) {
  for (int num_workers : {1, 2, 3}) {
    for (int replicas : {1, 3}) {
      InMemoryKvStore store;
      // 40-byte buckets: every size below 10 values is one bucket, the
      // others take the multi-bucket path.
      std::vector<std::unique_ptr<TestWorker>> workers =
          MakeWorkers(store, num_workers, replicas, /*bucket_bytes=*/40,
                      absl::StrCat("w", num_workers, "r", replicas));
      ASSERT_FALSE(HasFatalFailure());
      for (int64_t size : {1, 10, 1001}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          SCOPED_TRACE(absl::StrCat(num_workers, " workers x ", replicas,
                                    " replicas, ", size, " values, ",
                                    ReduceOpName(op)));
          std::vector<std::vector<Tensor>> values(num_workers);
          std::vector<std::vector<absl::Status>> statuses(
              num_workers, std::vector<absl::Status>(replicas));
          std::vector<std::thread> threads;
          for (int w = 0; w < num_workers; ++w) {
            for (int r = 0; r < replicas; ++r) {
              std::vector<float> mine(size);
              for (int64_t i = 0; i < size; ++i) mine[i] = ValueOf(w, r, i);
              values[w].push_back(*Tensor::FromFloats(mine, {size}));
            }
          }
          for (int w = 0; w < num_workers; ++w) {
            for (int r = 0; r < replicas; ++r) {
              threads.emplace_back([&, w, r] {
                statuses[w][r] = workers[w]->ops->AllReduce(
                    *workers[w]->group, r, op, values[w][r]);
              });
            }
          }
          for (std::thread& t : threads) t.join();
          const int total = num_workers * replicas;
          for (int w = 0; w < num_workers; ++w) {
            for (int r = 0; r < replicas; ++r) {
              ASSERT_TRUE(statuses[w][r].ok()) << statuses[w][r];
              absl::Span<const float> got = values[w][r].flat<float>();
              for (int64_t i = 0; i < size; ++i) {
                double expected = 0;
                for (int w2 = 0; w2 < num_workers; ++w2) {
                  for (int r2 = 0; r2 < replicas; ++r2) {
                    expected += ValueOf(w2, r2, i);
                  }
                }
                if (op == ReduceOp::kMean) expected /= total;
                ASSERT_NEAR(got[i], expected, 1e-4)
                    << "worker " << w << " replica " << r << " index " << i;
              }
            }
          }
        }
      }
    }
  }
}

TEST(MultiWorkerAllReduceTest, ALostWorkerFailsEveryReplicaOfTheOthers) {
  InMemoryKvStore store;
  std::vector<std::unique_ptr<TestWorker>> workers = MakeWorkers(
      store, 2, 2, MultiWorkerAllReduce::kDefaultBucketBytes, "lost");
  ASSERT_FALSE(HasFatalFailure());
  // Worker 1 goes away (its process died): only worker 0's replicas call.
  workers[1]->ops.reset();
  workers[1]->gloo.reset();
  std::vector<Tensor> values;
  values.push_back(*Tensor::FromFloats({1, 2, 3}, {3}));
  values.push_back(*Tensor::FromFloats({4, 5, 6}, {3}));
  std::vector<absl::Status> statuses(2);
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] = workers[0]->ops->AllReduce(*workers[0]->group, r,
                                               ReduceOp::kSum, values[r]);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  for (const absl::Status& status : statuses) {
    EXPECT_FALSE(status.ok());
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("all-reduce across workers"));
  }
}

TEST(MultiWorkerAllReduceTest, CrossReplicaReduceAddsTheWorkers) {
  InMemoryKvStore store;
  std::vector<std::unique_ptr<TestWorker>> workers = MakeWorkers(
      store, 2, 2, MultiWorkerAllReduce::kDefaultBucketBytes, "reduce");
  ASSERT_FALSE(HasFatalFailure());
  std::vector<absl::StatusOr<Tensor>> results(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      Tensor a = *Tensor::FromFloats({1.0f + w, 2}, {2});
      Tensor b = *Tensor::FromFloats({3, 4.0f + w}, {2});
      const Tensor* per_replica[] = {&a, &b};
      results[w] = workers[w]->ops->Reduce(ReduceOp::kMean, per_replica,
                                           workers[w]->devices.pointers()[0]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(results[w].ok()) << results[w].status();
    // (1 + 3 + 2 + 3) / 4 and (2 + 4 + 2 + 5) / 4.
    EXPECT_THAT(results[w]->flat<float>(),
                ::testing::ElementsAre(2.25f, 3.25f));
  }
}

}  // namespace
}  // namespace distrt
