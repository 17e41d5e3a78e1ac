// RendezvousServer and RendezvousClient together, over TCP on 127.0.0.1 with
// ports the OS picks; and a GlooGroup whose rendezvous goes through them.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/rendezvous_client.h"
#include "rpc/rendezvous_server.h"
#include "runtime/collective/gloo_group.h"

namespace distrt::rpc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::unique_ptr<RendezvousServer> StartOnFreePort(
    RendezvousServer::Options options = {}) {
  options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<RendezvousServer>> server =
      RendezvousServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string AddressOf(const RendezvousServer& server) {
  return absl::StrCat("127.0.0.1:", server.port());
}

RendezvousClient::Options ClientOptions(const std::string& address) {
  RendezvousClient::Options options;
  options.address = address;
  options.connect_timeout = absl::Seconds(20);
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  return options;
}

TEST(RendezvousTest, SetGetAndAddGoThroughTheServer) {
  std::unique_ptr<RendezvousServer> server = StartOnFreePort();
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  RendezvousClient client(ClientOptions(AddressOf(*server)));
  ASSERT_TRUE(client.Set("k", std::string("v\0\xff", 3)).ok());
  absl::StatusOr<std::vector<std::string>> values =
      client.Get({"k", "k"}, absl::ZeroDuration());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre(std::string("v\0\xff", 3),
                                   std::string("v\0\xff", 3)));
  EXPECT_EQ(*client.Add("n", 5), 5);
  EXPECT_EQ(*client.Add("n", -2), 3);
  // The server's own store is the same one.
  EXPECT_EQ(*server->store()->Add("n", 1), 4);
  values = client.Get({"n"}, absl::ZeroDuration());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre("4"));
}

TEST(RendezvousTest, GetWaitsForASetFromAnotherClient) {
  std::unique_ptr<RendezvousServer> server = StartOnFreePort();
  ASSERT_NE(server, nullptr);
  RendezvousClient waiter(ClientOptions(AddressOf(*server)));
  RendezvousClient setter(ClientOptions(AddressOf(*server)));
  absl::Notification getting;
  absl::StatusOr<std::vector<std::string>> values;
  std::thread thread([&] {
    getting.Notify();
    values = waiter.Get({"addr/0", "addr/1"}, absl::Seconds(60));
  });
  getting.WaitForNotification();
  ASSERT_TRUE(setter.Set("addr/1", "b").ok());
  ASSERT_TRUE(setter.Set("addr/0", "a").ok());
  thread.join();
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre("a", "b"));
}

TEST(RendezvousTest, GetTimesOutNamingTheMissingKeyAndTheServer) {
  std::unique_ptr<RendezvousServer> server = StartOnFreePort();
  ASSERT_NE(server, nullptr);
  RendezvousClient client(ClientOptions(AddressOf(*server)));
  ASSERT_TRUE(client.Set("here", "x").ok());
  absl::StatusOr<std::vector<std::string>> values =
      client.Get({"here", "missing"}, absl::Milliseconds(100));
  EXPECT_EQ(values.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(values.status().message()),
              StartsWith(absl::StrCat("Get to rendezvous server at ",
                                      AddressOf(*server),
                                      ": key \"missing\" not set within ")));
}

TEST(RendezvousTest, TheClientAsksAgainPastTheServersCap) {
  RendezvousServer::Options options;
  options.max_get_wait = absl::Milliseconds(50);
  std::unique_ptr<RendezvousServer> server = StartOnFreePort(options);
  ASSERT_NE(server, nullptr);
  RendezvousClient client(ClientOptions(AddressOf(*server)));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::string>> values =
      client.Get({"missing"}, absl::Milliseconds(400));
  // Not the server's 50 ms: the client's 400.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(400));
  EXPECT_EQ(values.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(values.status().message(), HasSubstr(" in all)"));
}

TEST(RendezvousTest, LimitsAndCounterErrorsComeThrough) {
  RendezvousServer::Options options;
  options.store.max_value_bytes = 4;
  std::unique_ptr<RendezvousServer> server = StartOnFreePort(options);
  ASSERT_NE(server, nullptr);
  RendezvousClient client(ClientOptions(AddressOf(*server)));
  absl::Status s = client.Set("k", "12345");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            absl::StrCat("Set to rendezvous server at ", AddressOf(*server),
                         ": value for key \"k\" is 5 bytes, more than the "
                         "limit of 4"));
  EXPECT_EQ(client.Get({""}, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(client.Set("k", "abc").ok());
  EXPECT_EQ(client.Add("k", 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RendezvousTest, AddCountsAcrossClients) {
  constexpr int kClients = 4;
  constexpr int kAddsEach = 50;
  std::unique_ptr<RendezvousServer> server = StartOnFreePort();
  ASSERT_NE(server, nullptr);
  std::vector<absl::Status> statuses(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      RendezvousClient client(ClientOptions(AddressOf(*server)));
      for (int i = 0; i < kAddsEach; ++i) {
        absl::StatusOr<int64_t> n = client.Add("barrier", 1);
        if (!n.ok()) {
          statuses[c] = n.status();
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(*server->store()->Add("barrier", 0), kClients * kAddsEach);
}

TEST(RendezvousTest, NoServerIsUnavailableNamingTheAddress) {
  std::unique_ptr<RendezvousServer> server = StartOnFreePort();
  ASSERT_NE(server, nullptr);
  const std::string address = AddressOf(*server);
  server->Stop();
  RendezvousClient::Options options = ClientOptions(address);
  options.connect_timeout = absl::Milliseconds(300);
  RendezvousClient client(options);
  const absl::Time start = absl::Now();
  absl::Status s = client.Set("k", "v");
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(s.message(),
            absl::StrCat("Set to rendezvous server at ", address,
                         ": cannot reach the server within 300ms (is it up, "
                         "and is this its address?)"));
  EXPECT_EQ(client.Add("k", 1).status().code(), absl::StatusCode::kUnavailable);
}

TEST(RendezvousTest, AClientThatStartsFirstWaitsForTheServer) {
  // A free port: the OS picked it, and nobody listens on it now.
  std::unique_ptr<RendezvousServer> first = StartOnFreePort();
  ASSERT_NE(first, nullptr);
  const int port = first->port();
  first->Stop();
  const std::string address = absl::StrCat("127.0.0.1:", port);

  RendezvousClient client(ClientOptions(address));
  absl::Notification calling;
  absl::Status set_status;
  std::thread worker([&] {
    calling.Notify();
    set_status = client.Set("early", "bird");
  });
  calling.WaitForNotification();
  // Nothing listens yet: another client gives up on it meanwhile (by when
  // the worker's first attempts have failed too).
  RendezvousClient::Options impatient = ClientOptions(address);
  impatient.connect_timeout = absl::Milliseconds(100);
  EXPECT_EQ(RendezvousClient(impatient).Set("k", "v").code(),
            absl::StatusCode::kUnavailable);
  RendezvousServer::Options options;
  options.listen_address = address;
  absl::StatusOr<std::unique_ptr<RendezvousServer>> server =
      RendezvousServer::Start(options);
  worker.join();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(set_status.ok()) << set_status;
  absl::StatusOr<std::vector<std::string>> values =
      (*server)->store()->Get({"early"}, absl::ZeroDuration());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre("bird"));
}

TEST(RendezvousTest, StopDoesNotWaitForWaitingGets) {
  std::unique_ptr<RendezvousServer> server = StartOnFreePort();
  ASSERT_NE(server, nullptr);
  RendezvousClient::Options options = ClientOptions(AddressOf(*server));
  options.connect_timeout = absl::Milliseconds(500);
  RendezvousClient client(options);
  ASSERT_TRUE(client.Set("connected", "yes").ok());
  absl::Notification getting;
  absl::StatusOr<std::vector<std::string>> values;
  std::thread thread([&] {
    getting.Notify();
    values = client.Get({"never"}, absl::Hours(1));
  });
  getting.WaitForNotification();
  const absl::Time start = absl::Now();
  server->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  thread.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(values.status().code(), absl::StatusCode::kUnavailable)
      << values.status();
}

TEST(RendezvousTest, BusyPortIsAClearError) {
  std::unique_ptr<RendezvousServer> first = StartOnFreePort();
  ASSERT_NE(first, nullptr);
  RendezvousServer::Options options;
  options.listen_address = AddressOf(*first);
  absl::StatusOr<std::unique_ptr<RendezvousServer>> second =
      RendezvousServer::Start(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()),
              StartsWith(absl::StrCat("cannot listen on ", AddressOf(*first))));
}

// The real arrangement: the chief serves the store, every rank (here a
// thread) is a client of it, and Gloo's rendezvous runs through gRPC.
TEST(RendezvousTest, GlooGroupMeetsThroughTheServer) {
  constexpr int kRanks = 3;
  constexpr size_t kElements = 1000;
  std::unique_ptr<RendezvousServer> server = StartOnFreePort();
  ASSERT_NE(server, nullptr);
  std::vector<absl::Status> statuses(kRanks);
  std::vector<std::vector<float>> results(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      RendezvousClient client(ClientOptions(AddressOf(*server)));
      GlooGroup::Options options;
      options.rank = rank;
      options.size = kRanks;
      options.prefix = "job/workers";
      options.timeout = absl::Seconds(30);
      absl::StatusOr<std::unique_ptr<GlooGroup>> group =
          GlooGroup::Create(&client, options);
      if (!group.ok()) {
        statuses[rank] = group.status();
        return;
      }
      results[rank].resize(kElements);
      for (size_t i = 0; i < kElements; ++i) {
        results[rank][i] = static_cast<float>((rank + 1) * i);
      }
      statuses[rank] = (*group)->AllReduceSum(absl::MakeSpan(results[rank]));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
    for (size_t i = 0; i < kElements; ++i) {
      // (1 + 2 + 3) * i
      ASSERT_EQ(results[rank][i], static_cast<float>(6 * i))
          << "rank " << rank << " element " << i;
    }
  }
  // The addresses went through the server's store, under the prefix.
  EXPECT_TRUE(
      server->store()
          ->Get({"job/workers/0", "job/workers/2"}, absl::ZeroDuration())
          .ok());
}

}  // namespace
}  // namespace distrt::rpc
