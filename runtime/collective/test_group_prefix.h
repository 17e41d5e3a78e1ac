#ifndef DISTRT_RUNTIME_COLLECTIVE_TEST_GROUP_PREFIX_H_
#define DISTRT_RUNTIME_COLLECTIVE_TEST_GROUP_PREFIX_H_

// For tests that connect GlooGroups through one shared KvStore: a store
// never forgets keys, so every group needs a prefix of its own.

#include <string>

namespace distrt {

// "<suite>.<test>#<n>": the current gtest test's name and a number no other
// call in this process returned.
std::string UniqueGroupPrefix();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_TEST_GROUP_PREFIX_H_
