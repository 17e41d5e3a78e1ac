#include "runtime/collective/gloo_store.h"

#include <chrono>
#include <string>
#include <vector>

#include "gloo/common/error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/collective/kv_store.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<char> Bytes(const std::string& s) {
  return std::vector<char>(s.begin(), s.end());
}

TEST(GlooStoreTest, KeysLiveUnderThePrefix) {
  InMemoryKvStore kv;
  GlooStore a(&kv, {"group_a", absl::Seconds(1)});
  GlooStore b(&kv, {"group_b", absl::Seconds(1)});
  a.set("0", Bytes(std::string("addr\0a", 6)));
  b.set("0", Bytes("addr b"));
  EXPECT_EQ(a.get("0"), Bytes(std::string("addr\0a", 6)));
  EXPECT_EQ(b.get("0"), Bytes("addr b"));
  a.wait({"0"});
  a.wait({"0"}, std::chrono::milliseconds(1));

  absl::StatusOr<std::vector<std::string>> raw =
      kv.Get({"group_a/0", "group_b/0"}, absl::ZeroDuration());
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_THAT(*raw, ElementsAre(std::string("addr\0a", 6), "addr b"));
  EXPECT_TRUE(a.first_error().ok());
}

TEST(GlooStoreTest, AMissingKeyThrowsNamingIt) {
  InMemoryKvStore kv;
  GlooStore store(&kv, {"g", absl::Seconds(30)});
  store.set("0", Bytes("x"));
  try {
    store.wait({"0", "1"}, std::chrono::milliseconds(20));
    FAIL() << "wait did not throw";
  } catch (const gloo::IoException& e) {
    EXPECT_THAT(e.what(), HasSubstr("wait of keys \"g/0\", \"g/1\" failed: "
                                    "key \"g/1\" not set within 20ms"));
  }
  const absl::Status first = store.first_error();
  EXPECT_EQ(first.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(first.message(), HasSubstr("key \"g/1\" not set"));
}

TEST(GlooStoreTest, CallsWithoutATimeoutWaitTheDefault) {
  InMemoryKvStore kv;
  GlooStore store(&kv, {"g", absl::Milliseconds(20)});
  EXPECT_THROW(store.get("missing"), gloo::IoException);
  EXPECT_THROW(store.wait({"missing"}), gloo::IoException);
  // gloo::kNoTimeout would be "forever" to Gloo's own stores.
  EXPECT_THROW(store.wait({"missing"}, gloo::kNoTimeout), gloo::IoException);
}

TEST(GlooStoreTest, AFailedSetThrowsWithTheStoresReason) {
  InMemoryKvStore::Options options;
  options.max_value_bytes = 2;
  InMemoryKvStore kv(options);
  GlooStore store(&kv, {"g", absl::Seconds(1)});
  try {
    store.set("0", Bytes("too long"));
    FAIL() << "set did not throw";
  } catch (const gloo::IoException& e) {
    EXPECT_THAT(e.what(), HasSubstr("set of key \"g/0\" failed: value for key "
                                    "\"g/0\" is 8 bytes"));
  }
  EXPECT_EQ(store.first_error().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
