#include "runtime/ps/hash_table_set.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/ps/table_policy.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

HashEmbeddingSpec Spec(std::string name) {
  HashEmbeddingSpec spec;
  spec.name = std::move(name);
  spec.dim = 4;
  spec.policy.eviction.max_rows = 100;
  return spec;
}

TEST(HashTableSetTest, SameSpecGivesTheSameTable) {
  HashTableSet set;
  absl::StatusOr<HashEmbeddingTable*> first = set.Create(Spec("C1"));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<HashEmbeddingTable*> again = set.Create(Spec("C1"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*first, *again);
  EXPECT_EQ((*first)->spec().policy.eviction.max_rows, 100);
}

TEST(HashTableSetTest, AnotherPolicyIsAlreadyExistsSayingWhatDiffers) {
  HashTableSet set;
  ASSERT_TRUE(set.Create(Spec("C1")).ok());
  HashEmbeddingSpec other = Spec("C1");
  other.policy.eviction.ttl_steps = 50;
  other.policy.admission.kind = AdmissionKind::kProbability;
  other.policy.admission.probability = 0.5;
  absl::StatusOr<HashEmbeddingTable*> table = set.Create(other);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(table.status().message(),
            "hash embedding table \"C1\" already exists with a different "
            "spec: admission.policy always vs probability, "
            "admission.probability 1 vs 0.5, eviction.ttl_steps unset vs 50");
}

TEST(HashTableSetTest, InvalidPolicyIsRefusedNamingTableAndField) {
  HashTableSet set;
  HashEmbeddingSpec spec = Spec("C1");
  spec.policy.eviction.max_rows = -1;
  absl::StatusOr<HashEmbeddingTable*> table = set.Create(spec);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(),
              HasSubstr("hash embedding table \"C1\": eviction.max_rows is "
                        "-1, must be at least 0 (0: unbounded)"));
  // Nothing was created: a valid spec of that name is then accepted.
  EXPECT_TRUE(set.List().empty());
  EXPECT_TRUE(set.Create(Spec("C1")).ok());
}

}  // namespace
}  // namespace distrt
