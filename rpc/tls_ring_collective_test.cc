#include "rpc/tls_ring_collective.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/tcp_sockets.h"
#include "rpc/tls_certificates.h"
#include "runtime/collective/kv_store.h"

namespace distrt::rpc {
namespace {

using ::testing::HasSubstr;

// A job's TLS (its CA, one certificate for every rank on 127.0.0.1) and
// token, and what a stranger might hold instead.
class TlsRingCollectiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PemKeyPair> ca =
        GenerateCertificateAuthority("ring test CA", absl::Hours(1));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    job_ = Tls(ca_, kToken);
    ASSERT_NE(job_, nullptr);
  }

  static std::shared_ptr<const DataPlaneTls> Tls(const PemKeyPair& ca,
                                                 const std::string& token) {
    absl::StatusOr<PemKeyPair> task =
        IssueCertificate(ca, "worker", {"127.0.0.1"}, absl::Hours(1));
    EXPECT_TRUE(task.ok()) << task.status();
    if (!task.ok()) return nullptr;
    absl::StatusOr<std::shared_ptr<const DataPlaneTls>> tls =
        DataPlaneTls::FromPem(task->certificate_pem, task->private_key_pem,
                              ca.certificate_pem, token);
    EXPECT_TRUE(tls.ok()) << tls.status();
    return tls.ok() ? *tls : nullptr;
  }

  TlsRingCollective::Options Base() {
    TlsRingCollective::Options options;
    options.tls = job_;
    options.timeout = absl::Seconds(30);
    options.prefix = prefix_;
    // Short, so that a silent stranger holds the listener briefly.
    options.hello_timeout = absl::Seconds(2);
    options.log = [this](absl::string_view line) {
      absl::MutexLock lock(&log_mu_);
      log_.emplace_back(line);
    };
    return options;
  }

  // Runs `body` on ranks 0 ... size - 1, each on a thread of its own with
  // its own group over one store; each rank's status. Ranks in `late` start
  // only after `before_late` has returned.
  std::vector<absl::Status> RunRanks(
      int size, const std::function<absl::Status(TlsRingCollective&)>& body,
      const std::vector<int>& late = {},
      const std::function<void()>& before_late = nullptr) {
    std::vector<absl::Status> statuses(size);
    std::vector<std::thread> threads;
    auto start = [&](int rank) {
      threads.emplace_back([&, rank] {
        TlsRingCollective::Options options = Base();
        options.rank = rank;
        options.size = size;
        absl::StatusOr<std::unique_ptr<TlsRingCollective>> group =
            TlsRingCollective::Create(&store_, options);
        statuses[rank] = group.ok() ? body(**group) : group.status();
      });
    };
    for (int rank = 0; rank < size; ++rank) {
      if (std::find(late.begin(), late.end(), rank) == late.end()) {
        start(rank);
      }
    }
    if (before_late) before_late();
    for (int rank : late) start(rank);
    for (std::thread& t : threads) t.join();
    return statuses;
  }

  std::vector<std::string> Log() {
    absl::MutexLock lock(&log_mu_);
    return log_;
  }

  static constexpr char kToken[] = "ring-test-token-0123456789";
  PemKeyPair ca_;
  std::shared_ptr<const DataPlaneTls> job_;
  InMemoryKvStore store_;
  std::string prefix_ = "test";
  absl::Mutex log_mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(log_mu_);
};

float FloatOf(int rank, size_t i) {
  return static_cast<float>((rank + 1) * 1000 + static_cast<int>(i % 997)) *
         0.25f;
}

int64_t IntOf(int rank, size_t i) {
  return (int64_t{rank + 1} << 33) + static_cast<int64_t>(i);
}

TEST_F(TlsRingCollectiveTest, EveryCollectiveGivesEveryRankTheSameAnswer) {
  for (int size : {1, 2, 3, 4}) {
    // Fewer elements than ranks, none, odd counts and more than a broadcast
    // segment.
    for (size_t count :
         {size_t{0}, size_t{1}, size_t{3}, size_t{1001}, size_t{300000}}) {
      SCOPED_TRACE(absl::StrCat(size, " ranks, ", count, " elements"));
      prefix_ = absl::StrCat("g", size, "-", count);
      std::vector<absl::Status> statuses =
          RunRanks(size, [&](TlsRingCollective& group) -> absl::Status {
            const int r = group.rank();
            std::vector<float> floats(count);
            std::vector<int64_t> ints(count);
            std::vector<double> doubles(count);
            for (size_t i = 0; i < count; ++i) {
              floats[i] = FloatOf(r, i);
              ints[i] = IntOf(r, i);
              doubles[i] = 0.5 * FloatOf(r, i);
            }
            if (absl::Status s = group.AllReduceSum(absl::MakeSpan(floats));
                !s.ok()) {
              return s;
            }
            if (absl::Status s = group.AllReduceSum(absl::MakeSpan(ints));
                !s.ok()) {
              return s;
            }
            if (absl::Status s = group.AllReduceSum(absl::MakeSpan(doubles));
                !s.ok()) {
              return s;
            }
            for (size_t i = 0; i < count; ++i) {
              float want_float = 0;
              int64_t want_int = 0;
              for (int q = 0; q < size; ++q) {
                want_float += FloatOf(q, i);
                want_int += IntOf(q, i);
              }
              if (floats[i] != want_float || ints[i] != want_int ||
                  doubles[i] != 0.5 * want_float) {
                return absl::InternalError(absl::StrCat("sum wrong at ", i));
              }
            }
            const int root = size - 1;
            std::vector<float> from_root(count, static_cast<float>(r));
            if (absl::Status s =
                    group.Broadcast(absl::MakeSpan(from_root), root);
                !s.ok()) {
              return s;
            }
            for (float v : from_root) {
              if (v != root) return absl::InternalError("broadcast wrong");
            }
            // Ranks give different numbers of elements: r + count % 5.
            std::vector<int64_t> mine(r + count % 5, r);
            absl::StatusOr<std::vector<int64_t>> all =
                group.AllGather(absl::MakeConstSpan(mine));
            if (!all.ok()) return all.status();
            std::vector<int64_t> want;
            for (int q = 0; q < size; ++q) {
              want.insert(want.end(), q + count % 5, q);
            }
            if (*all != want) return absl::InternalError("all-gather wrong");
            return group.Barrier();
          });
      for (int r = 0; r < size; ++r) {
        EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
      }
    }
  }
}

// A plain TCP socket to `port` on loopback, or -1.
int ConnectPlain(int port) {
  absl::StatusOr<int> fd =
      ConnectTcp("127.0.0.1", port, absl::Now() + absl::Seconds(10));
  return fd.ok() ? *fd : -1;
}

// Whether the peer closed `fd` within `timeout` (EOF or a reset).
bool ClosedWithin(int fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  char byte;
  while (absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      const ssize_t n = recv(fd, &byte, 1, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    }
  }
  return false;
}

// Rank 1 starts alone and publishes its address; strangers reach its
// listener first: a plain TCP client that says nothing, one that sends
// garbage, a TLS client of another CA, a job member with another token, and
// one with the job's token that claims to be another rank. Then rank 0
// joins: the ring forms with it, the strangers are closed, and the sums are
// right.
TEST_F(TlsRingCollectiveTest, StrangersWhoConnectFirstAreDroppedNeverPaired) {
  std::vector<int> strangers;
  std::shared_ptr<const DataPlaneTls> other_ca;
  absl::StatusOr<PemKeyPair> foreign =
      GenerateCertificateAuthority("another CA", absl::Hours(1));
  ASSERT_TRUE(foreign.ok());
  other_ca = Tls(*foreign, kToken);
  std::shared_ptr<const DataPlaneTls> other_token =
      Tls(ca_, "another-job-token-0123456789");
  std::vector<std::string> stranger_errors;

  auto attack = [&] {
    absl::StatusOr<std::vector<std::string>> address =
        store_.Get({"test/1"}, absl::Seconds(30));
    ASSERT_TRUE(address.ok()) << address.status();
    const int port =
        std::stoi((*address)[0].substr((*address)[0].rfind(':') + 1));
    // Silent, then garbage, over plain TCP.
    strangers.push_back(ConnectPlain(port));
    const int garbage = ConnectPlain(port);
    ASSERT_GE(garbage, 0);
    ASSERT_EQ(send(garbage, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL), 18);
    strangers.push_back(garbage);
    // TLS clients that pretend to be rank 0 with what they have.
    for (const auto& tls : {other_ca, other_token}) {
      TlsRingCollective::Options fake = Base();
      fake.tls = tls;
      fake.rank = 0;
      fake.size = 2;
      fake.connect_timeout = absl::Seconds(6);
      InMemoryKvStore fake_store;
      ASSERT_TRUE(fake_store.Set("test/1", (*address)[0]).ok());
      // Its own listener never hears from rank 1; what matters is rank 1's
      // refusal of its connection.
      absl::StatusOr<std::unique_ptr<TlsRingCollective>> joined =
          TlsRingCollective::Create(&fake_store, fake);
      EXPECT_FALSE(joined.ok());
      stranger_errors.push_back(joined.status().ToString());
    }
  };
  std::vector<absl::Status> statuses = RunRanks(
      2,
      [&](TlsRingCollective& group) -> absl::Status {
        std::vector<float> values(1000, static_cast<float>(group.rank() + 1));
        if (absl::Status s = group.AllReduceSum(absl::MakeSpan(values));
            !s.ok()) {
          return s;
        }
        for (float v : values) {
          if (v != 3) return absl::InternalError("sum wrong");
        }
        return absl::OkStatus();
      },
      /*late=*/{0}, attack);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_TRUE(statuses[1].ok()) << statuses[1];
  for (int fd : strangers) {
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(ClosedWithin(fd, absl::Seconds(20)));
    close(fd);
  }
  ASSERT_EQ(stranger_errors.size(), 2u);
  const std::vector<std::string> log = Log();
  bool refused_token = false, refused_handshake = false;
  for (const std::string& line : log) {
    if (absl::StrContains(line, "cluster token")) refused_token = true;
    if (absl::StrContains(line, "rank 1 of 2") &&
        absl::StrContains(line, "refused the connection from 127.0.0.1")) {
      refused_handshake = true;
    }
  }
  EXPECT_TRUE(refused_token) << ::testing::PrintToString(log);
  EXPECT_TRUE(refused_handshake) << ::testing::PrintToString(log);
}

// The job's certificate and token, but a hello naming another rank (an
// insider in the wrong place, or a confused restart) is refused too.
TEST_F(TlsRingCollectiveTest, AHelloFromTheWrongRankIsRefused) {
  std::vector<absl::Status> statuses = RunRanks(
      3, [](TlsRingCollective& group) { return group.Barrier(); },
      /*late=*/{0, 2},
      [&] {
        absl::StatusOr<std::vector<std::string>> address =
            store_.Get({"test/1"}, absl::Seconds(30));
        ASSERT_TRUE(address.ok());
        // Claims rank 2 to rank 1, whose left-hand neighbour is rank 0.
        TlsRingCollective::Options fake = Base();
        fake.rank = 2;
        fake.size = 3;
        fake.connect_timeout = absl::Seconds(5);
        InMemoryKvStore fake_store;
        ASSERT_TRUE(fake_store.Set("test/0", (*address)[0]).ok());
        absl::StatusOr<std::unique_ptr<TlsRingCollective>> joined =
            TlsRingCollective::Create(&fake_store, fake);
        EXPECT_FALSE(joined.ok());
        EXPECT_THAT(joined.status().message(), HasSubstr("refused"))
            << joined.status();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  bool wrong_rank = false;
  for (const std::string& line : Log()) {
    if (absl::StrContains(line, "it says it is rank 2")) wrong_rank = true;
  }
  EXPECT_TRUE(wrong_rank) << ::testing::PrintToString(Log());
}

TEST_F(TlsRingCollectiveTest, RanksThatMakeDifferentCallsFailNamingBoth) {
  std::vector<absl::Status> statuses =
      RunRanks(2, [](TlsRingCollective& group) -> absl::Status {
        std::vector<float> values(group.rank() == 0 ? 10 : 12, 1.0f);
        return group.AllReduceSum(absl::MakeSpan(values));
      });
  bool named = false;
  for (const absl::Status& s : statuses) {
    EXPECT_FALSE(s.ok());
    if (absl::StrContains(s.message(), "the ranks' calls differ")) {
      named = true;
    }
  }
  EXPECT_TRUE(named) << statuses[0] << " / " << statuses[1];
}

TEST_F(TlsRingCollectiveTest, ACollectiveFailsWhenAPeerCloses) {
  std::vector<absl::Status> statuses =
      RunRanks(3, [](TlsRingCollective& group) -> absl::Status {
        if (group.rank() == 2) {
          group.Close();
          return absl::OkStatus();
        }
        std::vector<float> values(100, 1.0f);
        absl::Status first = group.AllReduceSum(absl::MakeSpan(values));
        if (first.ok()) return absl::InternalError("no error");
        absl::Status second = group.AllReduceSum(absl::MakeSpan(values));
        if (second.code() != absl::StatusCode::kFailedPrecondition) {
          return absl::InternalError(absl::StrCat(
              "a failed group did not stay failed: ", second.ToString()));
        }
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
}

TEST_F(TlsRingCollectiveTest, BadOptionsAreRefused) {
  TlsRingCollective::Options options = Base();
  options.tls = nullptr;
  options.size = 2;
  absl::StatusOr<std::unique_ptr<TlsRingCollective>> made =
      TlsRingCollective::Create(&store_, options);
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), HasSubstr("no TLS"));
  options = Base();
  options.rank = 2;
  options.size = 2;
  EXPECT_EQ(TlsRingCollective::Create(&store_, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt::rpc
