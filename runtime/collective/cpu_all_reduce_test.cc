#include "runtime/collective/cpu_all_reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

// Replica r's value at index i: distinct per replica and index, exact in
// float32 when summed over up to 8 replicas.
float ValueOf(int replica, size_t i) {
  return static_cast<float>((replica + 1) * 1000 + static_cast<int>(i % 997)) *
         0.25f;
}

// Runs one all-reduce round on `num_replicas` threads over buffers of `size`
// and returns each replica's result and status.
void RunRound(CpuAllReduce& all_reduce, size_t size, ReduceOp op,
              std::vector<std::vector<float>>* buffers,
              std::vector<absl::Status>* statuses) {
  const int n = all_reduce.num_replicas();
  buffers->assign(n, {});
  statuses->assign(n, absl::OkStatus());
  for (int r = 0; r < n; ++r) {
    (*buffers)[r].resize(size);
    for (size_t i = 0; i < size; ++i) (*buffers)[r][i] = ValueOf(r, i);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      (*statuses)[r] =
          all_reduce.AllReduce(r, absl::MakeSpan((*buffers)[r]), op);
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(CpuAllReduceTest, SumAndMeanOverOneToEightReplicas) {
  // Sizes smaller than, equal to and not divisible by the replica count.
  for (int n = 1; n <= 8; ++n) {
    CpuAllReduce all_reduce(n);
    for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{8},
                        size_t{1000}, size_t{4099}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
        SCOPED_TRACE(absl::StrCat(n, " replicas, ", size, " values, ",
                                  ReduceOpName(op)));
        std::vector<std::vector<float>> buffers;
        std::vector<absl::Status> statuses;
        RunRound(all_reduce, size, op, &buffers, &statuses);
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(statuses[r].ok()) << statuses[r];
          for (size_t i = 0; i < size; ++i) {
            double expected = 0;
            for (int k = 0; k < n; ++k) expected += ValueOf(k, i);
            if (op == ReduceOp::kMean) expected /= n;
            ASSERT_NEAR(buffers[r][i], expected, 1e-6 * std::abs(expected))
                << "replica " << r << " index " << i;
          }
        }
      }
    }
  }
}

// Values whose float sum depends on the order of the additions.
std::vector<std::vector<float>> RandomBuffers(int num_replicas, size_t size,
                                              unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  std::vector<std::vector<float>> buffers(num_replicas);
  for (std::vector<float>& buffer : buffers) {
    buffer.resize(size);
    for (float& v : buffer) v = dist(rng);
  }
  return buffers;
}

// Replaces `buffers` (one per replica) by their all-reduce, each replica on
// its own thread.
std::vector<absl::Status> AllReduceOnThreads(
    CpuAllReduce& all_reduce, ReduceOp op,
    std::vector<std::vector<float>>& buffers) {
  const int n = all_reduce.num_replicas();
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] = all_reduce.AllReduce(r, absl::MakeSpan(buffers[r]), op);
    });
  }
  for (std::thread& t : threads) t.join();
  return statuses;
}

// Sizes around the multiples of any tile or worker count the implementation
// might use, and one large odd one.
constexpr size_t kSizes[] = {0,   1,    2,    7,    255,  257,  511,
                             513, 1023, 1027, 2051, 4099, 8195, 100003};

TEST(CpuAllReduceTest, SumIsInBufferOrderAndBitIdenticalEverywhere) {
  for (int n : {1, 2, 3, 5, 8, 9}) {
    // One worker per core, and fewer workers than replicas.
    std::vector<std::unique_ptr<CpuAllReduce>> all_reduces;
    for (int max_workers : {0, 1, 2}) {
      all_reduces.push_back(
          std::make_unique<CpuAllReduce>(n, absl::Minutes(1), max_workers));
    }
    for (size_t size : kSizes) {
      const std::vector<std::vector<float>> inputs =
          RandomBuffers(n, size, static_cast<unsigned>(n * 1000003 + size));
      std::vector<float> sums(size);
      for (size_t i = 0; i < size; ++i) {
        float sum = inputs[0][i];
        for (int k = 1; k < n; ++k) sum += inputs[k][i];
        sums[i] = sum;
      }
      for (const std::unique_ptr<CpuAllReduce>& all_reduce : all_reduces) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          SCOPED_TRACE(absl::StrCat(n, " replicas, ", all_reduce->num_workers(),
                                    " workers, ", size, " values, ",
                                    ReduceOpName(op)));
          std::vector<std::vector<float>> buffers = inputs;
          for (const absl::Status& s :
               AllReduceOnThreads(*all_reduce, op, buffers)) {
            ASSERT_TRUE(s.ok()) << s;
          }
          for (int r = 1; r < n; ++r) {
            ASSERT_TRUE(size == 0 ||
                        std::memcmp(buffers[r].data(), buffers[0].data(),
                                    size * sizeof(float)) == 0)
                << "replica " << r << " differs from replica 0";
          }
          for (size_t i = 0; i < size; ++i) {
            if (op == ReduceOp::kSum) {
              ASSERT_EQ(buffers[0][i], sums[i]) << "index " << i;
            } else {
              ASSERT_NEAR(buffers[0][i], sums[i] / n,
                          1e-6f * std::abs(sums[i]) + 1e-6f)
                  << "index " << i;
            }
          }
        }
      }
    }
  }
}

TEST(CpuAllReduceTest, NoMoreWorkersThanReplicasOrMaxWorkers) {
  EXPECT_EQ(CpuAllReduce(5, absl::Minutes(1), 2).num_workers(), 2);
  EXPECT_EQ(CpuAllReduce(2, absl::Minutes(1), 8).num_workers(), 2);
  EXPECT_EQ(CpuAllReduce(3, absl::Minutes(1), 1).num_workers(), 1);
  ReplicaBarrier barrier(6);
  EXPECT_EQ(CpuAllReduce(&barrier, 4).num_workers(), 4);

  // By default, one per core (at least one).
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  for (int n : {1, 2, 64}) {
    const int workers = CpuAllReduce(n).num_workers();
    EXPECT_GE(workers, 1);
    EXPECT_LE(workers, n);
    if (cores > 0) {
      EXPECT_EQ(workers, std::min(n, cores));
    }
  }
}

TEST(CpuAllReduceTest, RoundsBackToBackOnTheSameThreads) {
  // A replica that returned early would overwrite its buffer (or the next
  // round's span) while a worker still reads it.
  constexpr int kReplicas = 5;
  constexpr int kRounds = 20;
  CpuAllReduce all_reduce(kReplicas, absl::Minutes(1), /*max_workers=*/2);
  std::vector<absl::Status> statuses(kReplicas);
  std::vector<std::thread> threads;
  for (int r = 0; r < kReplicas; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> values;
      for (int round = 0; round < kRounds; ++round) {
        // Different sizes, so that a stale span would be caught too.
        values.assign(1000 + 37 * round, static_cast<float>(r + round));
        absl::Status s =
            all_reduce.AllReduce(r, absl::MakeSpan(values), ReduceOp::kSum);
        if (!s.ok()) {
          statuses[r] = s;
          return;
        }
        // Sum over k of (k + round), exact in float.
        const float expected = static_cast<float>(
            kReplicas * (kReplicas - 1) / 2 + kReplicas * round);
        // A wrong value is recorded, not returned on: the others would wait
        // for this replica until the timeout.
        for (size_t i = 0; i < values.size() && statuses[r].ok(); ++i) {
          if (values[i] != expected) {
            statuses[r] = absl::InternalError(
                absl::StrCat("round ", round, " index ", i, ": ", values[i],
                             " != ", expected));
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
}

TEST(CpuAllReduceTest, MismatchedSizesFailEveryReplica) {
  CpuAllReduce all_reduce(3);
  std::vector<std::vector<float>> buffers = {{1, 2}, {1, 2}, {1, 2, 3}};
  std::vector<absl::Status> statuses(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] =
          all_reduce.AllReduce(r, absl::MakeSpan(buffers[r]), ReduceOp::kSum);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("replica 2 has 3 values"));
  }
  // The next round works.
  std::vector<absl::Status> next;
  RunRound(all_reduce, 5, ReduceOp::kSum, &buffers, &next);
  for (const absl::Status& s : next) EXPECT_TRUE(s.ok()) << s;
}

TEST(CpuAllReduceTest, MismatchAtAReplicaThatDoesNoWorkFailsEveryReplica) {
  CpuAllReduce all_reduce(4, absl::Minutes(1), /*max_workers=*/1);
  std::vector<std::vector<float>> buffers = {{1, 2}, {1, 2}, {1, 2}, {1, 2}};
  std::vector<absl::Status> statuses(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] =
          all_reduce.AllReduce(r, absl::MakeSpan(buffers[r]),
                               r == 3 ? ReduceOp::kMean : ReduceOp::kSum);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("replica 3 has 2 values (MEAN)"));
  }
  // Nothing was reduced.
  for (const std::vector<float>& b : buffers) {
    EXPECT_EQ(b, (std::vector<float>{1, 2}));
  }
}

TEST(CpuAllReduceTest, MissingReplicaIsADeadlineNotAHang) {
  CpuAllReduce all_reduce(2, absl::Milliseconds(200));
  std::vector<float> values = {1, 2};
  absl::Status s =
      all_reduce.AllReduce(0, absl::MakeSpan(values), ReduceOp::kSum);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(
      all_reduce.AllReduce(1, absl::MakeSpan(values), ReduceOp::kSum).code(),
      absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace distrt
