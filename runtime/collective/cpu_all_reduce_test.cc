#include "runtime/collective/cpu_all_reduce.h"

#include <cmath>
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
