#include "runtime/ps/hash_table_set.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/ps/table_policy.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/status_macros.h"

namespace distrt {

std::string DescribeHashSpecDifference(const HashEmbeddingSpec& a,
                                       const HashEmbeddingSpec& b) {
  if (a.dim != b.dim) return absl::StrCat("dim ", a.dim, " vs ", b.dim);
  // Same dim: what remains to compare is what variable specs also have.
  auto as_variable = [](const HashEmbeddingSpec& spec) {
    return VariableSpec{spec.name,
                        DType::kFloat32,
                        {1, spec.dim},
                        spec.initializer,
                        spec.optimizer};
  };
  std::vector<std::string> diffs;
  if (std::string d = DescribeSpecDifference(as_variable(a), as_variable(b));
      !d.empty()) {
    diffs.push_back(std::move(d));
  }
  // A policy decides which rows exist: tasks holding shards of one table
  // with different policies would disagree on what it holds.
  if (std::string d = DescribePolicyDifference(a.policy, b.policy);
      !d.empty()) {
    diffs.push_back(std::move(d));
  }
  return absl::StrJoin(diffs, ", ");
}

absl::StatusOr<HashEmbeddingTable*> HashTableSet::Create(
    const HashEmbeddingSpec& spec) {
  absl::MutexLock lock(&mu_);
  if (auto it = tables_.find(spec.name); it != tables_.end()) {
    const std::string diff =
        DescribeHashSpecDifference(it->second->spec(), spec);
    if (!diff.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("hash embedding table \"", spec.name,
                       "\" already exists with a different spec: ", diff));
    }
    return it->second.get();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<HashEmbeddingTable> table,
                   HashEmbeddingTable::Create(spec));
  HashEmbeddingTable* raw = table.get();
  tables_[spec.name] = std::move(table);
  return raw;
}

absl::StatusOr<HashEmbeddingTable*> HashTableSet::Find(
    absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "hash embedding table \"", name, "\" is not on this parameter server"));
  }
  return it->second.get();
}

std::vector<HashEmbeddingTable*> HashTableSet::List() const {
  std::vector<HashEmbeddingTable*> tables;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& entry : tables_) tables.push_back(entry.second.get());
  }
  std::sort(tables.begin(), tables.end(),
            [](const HashEmbeddingTable* a, const HashEmbeddingTable* b) {
              return a->spec().name < b->spec().name;
            });
  return tables;
}

}  // namespace distrt
