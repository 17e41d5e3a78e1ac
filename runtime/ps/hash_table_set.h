#ifndef DISTRT_RUNTIME_PS_HASH_TABLE_SET_H_
#define DISTRT_RUNTIME_PS_HASH_TABLE_SET_H_

// HashTableSet: the hash embedding tables one parameter server holds (its
// shard of each: ids are spread over ps tasks by a hash of the id). Tables
// are never removed, so the pointers handed out stay valid as long as the
// set. Thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "runtime/ps/hash_embedding_table.h"

namespace distrt {

class HashTableSet {
 public:
  // Creates the table; asking again with the same spec returns the existing
  // table (every worker may ask), with a different spec: ALREADY_EXISTS
  // saying what differs. INVALID_ARGUMENT for an invalid spec.
  absl::StatusOr<HashEmbeddingTable*> Create(const HashEmbeddingSpec& spec);
  // NOT_FOUND naming the table when it is not here.
  absl::StatusOr<HashEmbeddingTable*> Find(absl::string_view name) const;
  // Sorted by name.
  std::vector<HashEmbeddingTable*> List() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<HashEmbeddingTable>> tables_
      ABSL_GUARDED_BY(mu_);
};

// Empty when equal; otherwise what differs, e.g. "dim 8 vs 16" or
// "optimizer sgd vs adagrad, eviction.max_rows 0 vs 1000".
std::string DescribeHashSpecDifference(const HashEmbeddingSpec& a,
                                       const HashEmbeddingSpec& b);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_HASH_TABLE_SET_H_
