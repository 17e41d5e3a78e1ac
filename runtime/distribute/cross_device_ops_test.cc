#include "runtime/distribute/cross_device_ops.h"

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distribute/cpu_chunked_all_reduce.h"
#include "runtime/distribute/hierarchical_copy_all_reduce.h"
#include "runtime/distribute/reduction_to_one_device.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/local_devices/local_devices.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

LocalDevices CpuDevices(int n) {
  LocalDevicesOptions options;
  options.num_cpu_devices = n;
  options.use_gpus = false;
  absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
  EXPECT_TRUE(devices.ok()) << devices.status();
  return *std::move(devices);
}

// Replica r's value at index i, seeded by both; exact in float32 when
// summed over up to 8 replicas.
float ValueOf(int replica, int64_t i) {
  return static_cast<float>((replica * 37 + 11) % 101 - 50) +
         static_cast<float>(i % 13) * 0.125f;
}

Tensor MakeValue(int replica, int64_t size) {
  std::vector<float> values(size);
  for (int64_t i = 0; i < size; ++i) values[i] = ValueOf(replica, i);
  return *Tensor::FromFloats(values, {size});
}

double Expected(int n, int64_t i, ReduceOp op) {
  double sum = 0;
  for (int r = 0; r < n; ++r) sum += ValueOf(r, i);
  return op == ReduceOp::kMean ? sum / n : sum;
}

std::vector<std::unique_ptr<CrossDeviceOps>> AllOps() {
  std::vector<std::unique_ptr<CrossDeviceOps>> ops;
  ops.push_back(std::make_unique<ReductionToOneDevice>());
  ops.push_back(std::make_unique<HierarchicalCopyAllReduce>());
  ops.push_back(std::make_unique<HierarchicalCopyAllReduce>(3));
  ops.push_back(std::make_unique<CpuChunkedAllReduce>());
  return ops;
}

TEST(CrossDeviceOpsTest, AllReduceSumAndMeanOverOneToEightReplicas) {
  for (int n = 1; n <= 8; ++n) {
    LocalDevices local = CpuDevices(n);
    ReplicaGroup group(local.pointers(), absl::Minutes(1));
    for (const auto& ops : AllOps()) {
      // Sizes below, at and not divisible by the replica count.
      for (int64_t size : {0, 1, 7, 8, 1000, 4099}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          SCOPED_TRACE(absl::StrCat(ops->name(), " ", n, " replicas, ", size,
                                    " values, ", ReduceOpName(op)));
          std::vector<Tensor> values;
          for (int r = 0; r < n; ++r) values.push_back(MakeValue(r, size));
          std::vector<absl::Status> statuses(n);
          std::vector<std::thread> threads;
          for (int r = 0; r < n; ++r) {
            threads.emplace_back([&, r] {
              statuses[r] = ops->AllReduce(group, r, op, values[r]);
            });
          }
          for (std::thread& t : threads) t.join();
          for (int r = 0; r < n; ++r) {
            ASSERT_TRUE(statuses[r].ok()) << statuses[r];
            auto got = values[r].flat<float>();
            for (int64_t i = 0; i < size; ++i) {
              const double want = Expected(n, i, op);
              ASSERT_NEAR(got[i], want, 1e-5 * (1 + std::abs(want)))
                  << "replica " << r << " index " << i;
            }
          }
        }
      }
    }
  }
}

TEST(CrossDeviceOpsTest, MismatchedShapesFailEveryReplica) {
  LocalDevices local = CpuDevices(3);
  ReplicaGroup group(local.pointers(), absl::Minutes(1));
  for (const auto& ops : AllOps()) {
    SCOPED_TRACE(ops->name());
    std::vector<Tensor> values;
    values.push_back(MakeValue(0, 4));
    values.push_back(MakeValue(1, 4));
    values.push_back(MakeValue(2, 5));
    std::vector<absl::Status> statuses(3);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r) {
      threads.emplace_back([&, r] {
        statuses[r] = ops->AllReduce(group, r, ReduceOp::kSum, values[r]);
      });
    }
    for (std::thread& t : threads) t.join();
    for (const absl::Status& s : statuses) {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_THAT(s.message(), HasSubstr("replica 2"));
    }
    EXPECT_TRUE(group.barrier().failure().ok());
  }
}

TEST(CrossDeviceOpsTest, CrossReplicaReduceBatchReduceAndBroadcast) {
  constexpr int kReplicas = 5;
  LocalDevices local = CpuDevices(kReplicas);
  std::vector<Device*> devices = local.pointers();
  for (const auto& ops : AllOps()) {
    SCOPED_TRACE(ops->name());
    std::vector<Tensor> a, b;
    std::vector<const Tensor*> a_ptrs, b_ptrs;
    for (int r = 0; r < kReplicas; ++r) {
      a.push_back(MakeValue(r, 9));
      b.push_back(MakeValue(r + 3, 2));
    }
    for (int r = 0; r < kReplicas; ++r) {
      a_ptrs.push_back(&a[r]);
      b_ptrs.push_back(&b[r]);
    }
    absl::StatusOr<Tensor> mean =
        ops->Reduce(ReduceOp::kMean, a_ptrs, devices[2]);
    ASSERT_TRUE(mean.ok()) << mean.status();
    for (int64_t i = 0; i < 9; ++i) {
      EXPECT_NEAR(mean->flat<float>()[i],
                  Expected(kReplicas, i, ReduceOp::kMean), 1e-5);
    }
    std::vector<std::vector<const Tensor*>> batch = {a_ptrs, b_ptrs};
    absl::StatusOr<std::vector<Tensor>> sums =
        ops->BatchReduce(ReduceOp::kSum, batch, devices[0]);
    ASSERT_TRUE(sums.ok()) << sums.status();
    ASSERT_EQ(sums->size(), 2u);
    EXPECT_EQ((*sums)[1].shape(), std::vector<int64_t>{2});
    double want = 0;
    for (int r = 3; r < kReplicas + 3; ++r) want += ValueOf(r, 1);
    EXPECT_NEAR((*sums)[1].flat<float>()[1], want, 1e-5);

    absl::StatusOr<std::vector<Tensor>> copies = ops->Broadcast(a[4], devices);
    ASSERT_TRUE(copies.ok()) << copies.status();
    ASSERT_EQ(copies->size(), size_t{kReplicas});
    for (const Tensor& copy : *copies) {
      EXPECT_EQ(copy.flat<float>()[8], ValueOf(4, 8));
      EXPECT_NE(copy.raw_data(), a[4].raw_data());
    }
    std::vector<const Tensor*> none;
    EXPECT_EQ(ops->Reduce(ReduceOp::kSum, none, devices[0]).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(CrossDeviceOpsTest, ChoosesByDevicesAndByName) {
  LocalDevices local = CpuDevices(2);
  std::vector<Device*> devices = local.pointers();
  EXPECT_EQ(ChooseCrossDeviceOps(devices)->name(), "cpu_all_reduce");
  for (const char* name :
       {"reduction_to_one_device", "hierarchical_copy", "cpu_all_reduce"}) {
    absl::StatusOr<std::unique_ptr<CrossDeviceOps>> ops =
        CreateCrossDeviceOps(name, devices);
    ASSERT_TRUE(ops.ok()) << ops.status();
    EXPECT_EQ((*ops)->name(), name);
  }
  absl::StatusOr<std::unique_ptr<CrossDeviceOps>> unknown =
      CreateCrossDeviceOps("ring", devices);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("hierarchical_copy"));
}

}  // namespace
}  // namespace distrt
