// Each wrapped system library links and does its basic job here: a
// misspelled linkopt or a missing package fails this test, not a later issue.

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "Eigen/Dense"
#include "gloo/allreduce.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/hash_store.h"
#include "gloo/transport/tcp/device.h"
#include "gtest/gtest.h"

namespace {

TEST(SystemLibrariesTest, EigenMultipliesMatrices) {
  Eigen::Matrix2f a;
  a << 1, 2, 3, 4;
  Eigen::Matrix2f b;
  b << 5, 6, 7, 8;
  const Eigen::Matrix2f c = a * b;
  EXPECT_FLOAT_EQ(c(0, 0), 19);
  EXPECT_FLOAT_EQ(c(0, 1), 22);
  EXPECT_FLOAT_EQ(c(1, 0), 43);
  EXPECT_FLOAT_EQ(c(1, 1), 50);
}

// Two Gloo ranks as two threads over TCP on 127.0.0.1, rendezvous through an
// in-memory store: rank r contributes (r + 1) * i at element i.
TEST(SystemLibrariesTest, GlooAllReducesOverTcp) {
  constexpr int kRanks = 2;
  constexpr size_t kElements = 1000;
  gloo::rendezvous::HashStore store;
  std::vector<std::vector<float>> data(kRanks, std::vector<float>(kElements));
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.emplace_back([&, rank] {
      for (size_t i = 0; i < kElements; ++i) data[rank][i] = (rank + 1) * i;
      gloo::transport::tcp::attr attr("127.0.0.1");
      std::shared_ptr<gloo::transport::Device> device =
          gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, kRanks);
      context->setTimeout(std::chrono::seconds(30));
      context->connectFullMesh(store, device);
      gloo::AllreduceOptions options(context);
      options.setOutput(data[rank].data(), kElements);
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(
              &gloo::sum<float>));
      gloo::allreduce(options);
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    for (size_t i = 0; i < kElements; ++i) {
      ASSERT_FLOAT_EQ(data[rank][i], 3.0f * i) << "rank " << rank << " i " << i;
    }
  }
}

}  // namespace
