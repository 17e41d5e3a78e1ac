#include "runtime/collective/gloo_group.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/collective/kv_store.h"
#include "runtime/collective/test_group_prefix.h"
#include "runtime/util/status_macros.h"

// LeakSanitizer suppressions (--config=asan), looked up by name; other
// builds never call this. Gloo 2022-05's CreateDeviceAttr does not free its
// getaddrinfo() result when it throws (AHostThatIsNotOursIsUnavailable): 64
// bytes, once per failed Create.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:gloo::transport::tcp::CreateDeviceAttr\n";
}

namespace distrt {
namespace {

using ::testing::HasSubstr;

// Runs `body` for ranks 0 ... size - 1, each on its own thread with its own
// GlooGroup over `store`, and returns each rank's status (the Create error,
// or what `body` returned).
//
// No body starts before every rank's Create has returned: a body that
// leaves, closes or times out early could otherwise catch a peer still
// joining, which would then fail in Create instead of where the test looks.
// A failed Create counts as returned, and the wait is bounded.
std::vector<absl::Status> RunRanks(
    KvStore* store, int size, const GlooGroup::Options& base,
    const std::function<absl::Status(GlooGroup&)>& body) {
  std::vector<absl::Status> statuses(size);
  absl::Mutex mutex;
  int joined = 0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      GlooGroup::Options options = base;
      options.rank = rank;
      options.size = size;
      absl::StatusOr<std::unique_ptr<GlooGroup>> group =
          GlooGroup::Create(store, options);
      {
        absl::MutexLock lock(&mutex);
        ++joined;
        const auto everyone_joined = [&] { return joined == size; };
        mutex.AwaitWithTimeout(absl::Condition(&everyone_joined),
                               absl::Seconds(60));
      }
      statuses[rank] = group.ok() ? body(**group) : group.status();
    });
  }
  for (std::thread& t : threads) t.join();
  return statuses;
}

// Rank r's float at index i: distinct per rank and index, a multiple of 1/4
// below 2^12, so sums over a few ranks are exact in float32 whatever the
// order of additions.
float FloatOf(int rank, size_t i) {
  return static_cast<float>((rank + 1) * 1000 + static_cast<int>(i % 997)) *
         0.25f;
}

// Beyond 32 bits, so a truncating transport or reduction would show.
int64_t IntOf(int rank, size_t i) {
  return (int64_t{rank + 1} << 40) + static_cast<int64_t>(i) * (rank + 3);
}

// World size, element count, Gloo segment size (0: its default), and
// whether all-reduces always take Gloo's ring (else 2 ranks exchange
// halves below 32 MiB).
class GlooGroupCollectiveTest
    : public testing::TestWithParam<std::tuple<int, size_t, size_t, bool>> {
 protected:
  int world() const { return std::get<0>(GetParam()); }
  size_t elements() const { return std::get<1>(GetParam()); }
  GlooGroup::Options BaseOptions() const {
    GlooGroup::Options options;
    options.prefix = UniqueGroupPrefix();
    options.timeout = absl::Seconds(30);
    options.max_segment_bytes = std::get<2>(GetParam());
    if (std::get<3>(GetParam())) options.exchange_below_bytes = 0;
    return options;
  }
  InMemoryKvStore store_;
};

TEST_P(GlooGroupCollectiveTest, AllReduceSumIsTheSumOfEveryRank) {
  const int n = world();
  const size_t count = elements();
  // Computed here, apart from Gloo, in double.
  std::vector<double> want_float(count, 0.0);
  std::vector<int64_t> want_int(count, 0);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      want_float[i] += FloatOf(r, i);
      want_int[i] += IntOf(r, i);
    }
  }
  std::vector<absl::Status> statuses =
      RunRanks(&store_, n, BaseOptions(), [&](GlooGroup& group) {
        const int r = group.rank();
        // Twice, so that a second call on the same connections works too.
        for (int round = 0; round < 2; ++round) {
          std::vector<float> floats(count);
          std::vector<int64_t> ints(count);
          for (size_t i = 0; i < count; ++i) {
            floats[i] = FloatOf(r, i);
            ints[i] = IntOf(r, i);
          }
          RETURN_IF_ERROR(group.AllReduceSum(absl::MakeSpan(floats)));
          RETURN_IF_ERROR(group.AllReduceSum(absl::MakeSpan(ints)));
          for (size_t i = 0; i < count; ++i) {
            if (floats[i] != want_float[i] || ints[i] != want_int[i]) {
              return absl::InternalError(
                  absl::StrCat("rank ", r, " round ", round, " element ", i,
                               ": ", floats[i], " and ", ints[i], ", want ",
                               want_float[i], " and ", want_int[i]));
            }
          }
        }
        return absl::OkStatus();
      });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(statuses[r].ok()) << statuses[r];
}

TEST_P(GlooGroupCollectiveTest, BroadcastFromEveryRoot) {
  const int n = world();
  const size_t count = elements();
  std::vector<absl::Status> statuses =
      RunRanks(&store_, n, BaseOptions(), [&](GlooGroup& group) {
        const int r = group.rank();
        for (int root = 0; root < n; ++root) {
          std::vector<float> floats(count);
          std::vector<int64_t> ints(count);
          for (size_t i = 0; i < count; ++i) {
            floats[i] = FloatOf(r, i);
            ints[i] = IntOf(r, i);
          }
          RETURN_IF_ERROR(group.Broadcast(absl::MakeSpan(floats), root));
          RETURN_IF_ERROR(group.Broadcast(absl::MakeSpan(ints), root));
          for (size_t i = 0; i < count; ++i) {
            if (floats[i] != FloatOf(root, i) || ints[i] != IntOf(root, i)) {
              return absl::InternalError(
                  absl::StrCat("rank ", r, " root ", root, " element ", i, ": ",
                               floats[i], " and ", ints[i]));
            }
          }
        }
        return absl::OkStatus();
      });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(statuses[r].ok()) << statuses[r];
}

// Rank r gives (r * elements) % 5 ... elements: sizes differ by rank, and
// with elements 1 some ranks give nothing.
TEST_P(GlooGroupCollectiveTest, AllGatherConcatenatesEveryRanksValues) {
  const int n = world();
  auto count_of = [&](int r) { return elements() + (r * elements()) % 5; };
  std::vector<float> want_float;
  std::vector<int64_t> want_int;
  for (int r = 0; r < n; ++r) {
    const size_t count = r % 2 == 1 && elements() == 1 ? 0 : count_of(r);
    for (size_t i = 0; i < count; ++i) {
      want_float.push_back(FloatOf(r, i));
      want_int.push_back(IntOf(r, i));
    }
  }
  std::vector<absl::Status> statuses =
      RunRanks(&store_, n, BaseOptions(), [&](GlooGroup& group) {
        const int r = group.rank();
        const size_t count = r % 2 == 1 && elements() == 1 ? 0 : count_of(r);
        std::vector<float> floats;
        std::vector<int64_t> ints;
        for (size_t i = 0; i < count; ++i) {
          floats.push_back(FloatOf(r, i));
          ints.push_back(IntOf(r, i));
        }
        ASSIGN_OR_RETURN(std::vector<float> all_floats,
                         group.AllGather(absl::MakeConstSpan(floats)));
        ASSIGN_OR_RETURN(std::vector<int64_t> all_ints,
                         group.AllGather(absl::MakeConstSpan(ints)));
        if (all_floats != want_float || all_ints != want_int) {
          return absl::InternalError(
              absl::StrCat("rank ", r, " gathered ", all_floats.size(),
                           " floats and ", all_ints.size(), " ints, not the ",
                           want_float.size(), " expected values"));
        }
        return absl::OkStatus();
      });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(statuses[r].ok()) << statuses[r];
}

std::string ParamName(
    const testing::TestParamInfo<std::tuple<int, size_t, size_t, bool>>& info) {
  return absl::StrCat("ranks", std::get<0>(info.param), "_elements",
                      std::get<1>(info.param), "_segment",
                      std::get<2>(info.param),
                      std::get<3>(info.param) ? "_ring" : "");
}

INSTANTIATE_TEST_SUITE_P(
    WorldsAndSizes, GlooGroupCollectiveTest,
    testing::Combine(testing::Values(1, 2, 3, 4),
                     testing::Values<size_t>(1, 7, 1000, 100003),
                     // 256 bytes: even 1000 floats take many segments.
                     testing::Values<size_t>(0, 256), testing::Values(false)),
    ParamName);
// Only 2 ranks choose between the exchange and the ring.
INSTANTIATE_TEST_SUITE_P(
    TwoRanksOnTheRing, GlooGroupCollectiveTest,
    testing::Combine(testing::Values(2),
                     testing::Values<size_t>(1, 7, 1000, 100003),
                     testing::Values<size_t>(0, 256), testing::Values(true)),
    ParamName);

TEST(GlooGroupTest, NobodyPassesABarrierBeforeEveryoneArrived) {
  constexpr int kRanks = 4;
  constexpr int kRounds = 20;
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  options.timeout = absl::Seconds(30);
  std::atomic<int> arrivals{0};
  std::vector<absl::Status> statuses =
      RunRanks(&store, kRanks, options, [&](GlooGroup& group) {
        for (int round = 0; round < kRounds; ++round) {
          arrivals.fetch_add(1);
          RETURN_IF_ERROR(group.Barrier());
          if (arrivals.load() < (round + 1) * kRanks) {
            return absl::InternalError(
                absl::StrCat("rank ", group.rank(), " passed barrier ", round,
                             " after ", arrivals.load(), " arrivals"));
          }
          // A second barrier, so that no rank counts its next arrival
          // before a slow one checks this one.
          RETURN_IF_ERROR(group.Barrier());
        }
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
}

TEST(GlooGroupTest, BadOptionsAreInvalidArguments) {
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.rank = 2;
  options.size = 2;
  absl::StatusOr<std::unique_ptr<GlooGroup>> group =
      GlooGroup::Create(&store, options);
  EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.status().message(),
            "GlooGroup \"gloo\": rank 2 is not in [0, size = 2)");
  options.rank = 0;
  options.timeout = absl::ZeroDuration();
  EXPECT_EQ(GlooGroup::Create(&store, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.timeout = absl::Seconds(1);
  options.prefix = "";
  EXPECT_EQ(GlooGroup::Create(&store, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GlooGroupTest, AHostThatIsNotOursIsUnavailable) {
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.host = "192.0.2.1";  // TEST-NET-1: never an address of this host
  options.prefix = UniqueGroupPrefix();
  absl::StatusOr<std::unique_ptr<GlooGroup>> group =
      GlooGroup::Create(&store, options);
  EXPECT_EQ(group.status().code(), absl::StatusCode::kUnavailable)
      << group.status();
  EXPECT_THAT(group.status().message(),
              HasSubstr("rank 0 of 1 (group \"" + options.prefix +
                        "\") cannot listen on 192.0.2.1"));
}

TEST(GlooGroupTest, BroadcastRootOutOfRange) {
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  absl::StatusOr<std::unique_ptr<GlooGroup>> group =
      GlooGroup::Create(&store, options);
  ASSERT_TRUE(group.ok()) << group.status();
  float value = 1;
  absl::Status s = (*group)->Broadcast(absl::MakeSpan(&value, 1), 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("root 1 is not in [0, 1)"));
}

// The bound the failure tests hold Gloo to: several times the group timeout
// (a failure may take one timeout to notice and another to spread), far
// below a hang.
constexpr absl::Duration kFailureTimeout = absl::Seconds(2);
constexpr absl::Duration kMustFailWithin = absl::Seconds(20);
// Joining is not what those tests test: slow under sanitizers, it must not
// fail in Create.
constexpr absl::Duration kJoinTimeout = absl::Seconds(30);

TEST(GlooGroupTest, ARankThatNeverJoinsFailsCreateNamingIt) {
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  options.timeout = kFailureTimeout;
  std::vector<absl::Status> statuses(2);
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  // Ranks 0 and 1 of 3; rank 2 never comes.
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      GlooGroup::Options mine = options;
      mine.rank = rank;
      mine.size = 3;
      statuses[rank] = GlooGroup::Create(&store, mine).status();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LT(absl::Now() - start, kMustFailWithin);
  for (int rank = 0; rank < 2; ++rank) {
    const absl::Status& s = statuses[rank];
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_THAT(s.message(),
                HasSubstr(absl::StrCat("connecting rank ", rank, " of 3")));
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("key \"", options.prefix,
                                                    "/2\" not set within 2s")));
  }
}

TEST(GlooGroupTest, ARankThatLeavesFailsTheOthersCollective) {
  // Several times: a write to the closed connection raises SIGPIPE only
  // when it beats Gloo's read of the close (about one run in fifteen), and
  // SIGPIPE must fail the collective, not kill the process.
  constexpr int kRounds = 8;
  InMemoryKvStore store;
  for (int round = 0; round < kRounds; ++round) {
    GlooGroup::Options options;
    options.prefix = UniqueGroupPrefix();
    options.timeout = kFailureTimeout;
    options.connect_timeout = kJoinTimeout;
    const absl::Time start = absl::Now();
    std::vector<absl::Status> later(3);
    std::vector<absl::Status> statuses =
        RunRanks(&store, 3, options, [&](GlooGroup& group) {
          RETURN_IF_ERROR(group.Barrier());
          // Rank 2 goes away (its connections close, as when a worker
          // dies); the others all-reduce without it.
          if (group.rank() == 2) return absl::OkStatus();
          std::vector<float> values(1000, 1.0f);
          absl::Status s = group.AllReduceSum(absl::MakeSpan(values));
          // A failed group stays failed.
          later[group.rank()] = group.Barrier();
          return s;
        });
    EXPECT_LT(absl::Now() - start, kMustFailWithin);
    EXPECT_TRUE(statuses[2].ok()) << statuses[2];
    for (int rank = 0; rank < 2; ++rank) {
      const absl::Status& s = statuses[rank];
      EXPECT_THAT(s.code(), testing::AnyOf(absl::StatusCode::kUnavailable,
                                           absl::StatusCode::kDeadlineExceeded))
          << s;
      EXPECT_THAT(
          s.message(),
          HasSubstr(absl::StrCat("all-reduce on rank ", rank, " of 3 (group \"",
                                 options.prefix, "\"): ")));
      EXPECT_EQ(later[rank].code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(later[rank].message(),
                  HasSubstr("the group failed earlier: all-reduce on rank"));
    }
  }
}

// With 2 and 3 ranks: the last rank stops calling. With 2, the all-reduce
// is GlooGroup's own exchange of halves; Gloo's BCube and
// AllreduceRingChunked, faster than its ring there too, waited until the
// peer closed, past any timeout.
class GlooGroupStoppedRankTest : public testing::TestWithParam<int> {};

TEST_P(GlooGroupStoppedRankTest, ARankThatStopsCallingIsADeadlineNotAHang) {
  const int n = GetParam();
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  options.timeout = kFailureTimeout;
  options.connect_timeout = kJoinTimeout;
  absl::Notification others_done;
  std::atomic<int> others_left{n - 1};
  const absl::Time start = absl::Now();
  std::vector<absl::Status> statuses =
      RunRanks(&store, n, options, [&](GlooGroup& group) {
        if (group.rank() == n - 1) {
          // Alive and connected, but never comes to the all-reduce.
          others_done.WaitForNotificationWithTimeout(kMustFailWithin);
          return absl::OkStatus();
        }
        std::vector<float> values(1000, 1.0f);
        absl::Status s = group.AllReduceSum(absl::MakeSpan(values));
        if (others_left.fetch_sub(1) == 1) others_done.Notify();
        return s;
      });
  EXPECT_LT(absl::Now() - start, kMustFailWithin);
  bool one_timed_out = false;
  for (int rank = 0; rank < n - 1; ++rank) {
    const absl::Status& s = statuses[rank];
    // A rank may see another give up (UNAVAILABLE) before its own timeout.
    EXPECT_THAT(s.code(), testing::AnyOf(absl::StatusCode::kUnavailable,
                                         absl::StatusCode::kDeadlineExceeded))
        << s;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("all-reduce on rank ", rank,
                                                    " of ", n)));
    one_timed_out |= s.code() == absl::StatusCode::kDeadlineExceeded;
  }
  // At least one of them must have timed out itself: nobody closed a
  // connection before then.
  EXPECT_TRUE(one_timed_out) << statuses[0];
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooGroupStoppedRankTest,
                         testing::Values(2, 3));

TEST(GlooGroupTest, ARankThatClosesFailsTheOthersBeforeTheirTimeout) {
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  options.timeout = absl::Seconds(60);  // far beyond what the test waits
  absl::Notification others_done;
  std::atomic<int> others_left{2};
  const absl::Time start = absl::Now();
  std::vector<absl::Status> statuses =
      RunRanks(&store, 3, options, [&](GlooGroup& group) {
        if (group.rank() == 2) {
          // Alive, but gives up on the group: its peers must not wait.
          group.Close();
          std::vector<float> values(4, 1.0f);
          absl::Status after = group.AllReduceSum(absl::MakeSpan(values));
          others_done.WaitForNotificationWithTimeout(kMustFailWithin);
          return after;
        }
        std::vector<float> values(1000, 1.0f);
        absl::Status s = group.AllReduceSum(absl::MakeSpan(values));
        if (others_left.fetch_sub(1) == 1) others_done.Notify();
        return s;
      });
  EXPECT_LT(absl::Now() - start, kMustFailWithin);
  EXPECT_EQ(statuses[2].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(statuses[2].message(), HasSubstr("closed its connections"));
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kUnavailable)
        << statuses[rank];
  }
}

// Joining and collectives have separate bounds: a long join allowance must
// not stretch the collectives' timeout, and a short collective timeout must
// not cut joining short. Each bound is shown failing well before the other
// would have.
TEST(GlooGroupTest, TheConnectTimeoutBoundsJoining) {
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  options.rank = 0;
  options.size = 2;  // rank 1 never comes
  options.timeout = absl::Seconds(60);
  options.connect_timeout = absl::Milliseconds(500);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<GlooGroup>> group =
      GlooGroup::Create(&store, options);
  EXPECT_EQ(group.status().code(), absl::StatusCode::kDeadlineExceeded)
      << group.status();
  EXPECT_LT(absl::Now() - start, kMustFailWithin);
}

TEST(GlooGroupTest, TheCollectiveTimeoutHoldsAfterALongConnectTimeout) {
  InMemoryKvStore store;
  GlooGroup::Options options;
  options.prefix = UniqueGroupPrefix();
  options.timeout = absl::Milliseconds(500);
  options.connect_timeout = absl::Seconds(60);
  absl::Notification rank0_done;
  absl::Time start;
  std::vector<absl::Status> statuses =
      RunRanks(&store, 2, options, [&](GlooGroup& group) {
        if (group.rank() == 1) {
          // Connected, but never comes to the barrier.
          rank0_done.WaitForNotificationWithTimeout(kMustFailWithin);
          return absl::OkStatus();
        }
        start = absl::Now();
        absl::Status s = group.Barrier();
        EXPECT_LT(absl::Now() - start, kMustFailWithin);
        rank0_done.Notify();
        return s;
      });
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kDeadlineExceeded)
      << statuses[0];
  EXPECT_TRUE(statuses[1].ok()) << statuses[1];
}

}  // namespace
}  // namespace distrt
