#ifndef DISTRT_RUNTIME_DISTRIBUTE_VALUES_H_
#define DISTRT_RUNTIME_DISTRIBUTE_VALUES_H_

// Values that exist once per replica, as tf.distribute's DistributedValues:
// PerReplica holds each replica's own (unsynchronised) value, e.g. the loss
// of its part of the batch; Mirrored holds values kept identical on every
// replica's device, e.g. a variable's copies after an all-reduce. Unwrap
// gives the components in replica order (TF's experimental_local_results).
// Move-only when T is (tensors are).

#include <type_traits>
#include <utility>
#include <vector>

namespace distrt {

template <typename T>
class DistributedValues {
 public:
  explicit DistributedValues(std::vector<T> values)
      : values_(std::move(values)) {}

  int num_replicas() const { return static_cast<int>(values_.size()); }
  const T& operator[](int replica) const { return values_[replica]; }
  T& operator[](int replica) { return values_[replica]; }

  const std::vector<T>& Unwrap() const { return values_; }
  std::vector<T>& Unwrap() { return values_; }

 private:
  std::vector<T> values_;
};

template <typename T>
class PerReplica : public DistributedValues<T> {
 public:
  using DistributedValues<T>::DistributedValues;
};

template <typename T>
class Mirrored : public DistributedValues<T> {
 public:
  using DistributedValues<T>::DistributedValues;
  // The first replica's copy: the one cross-replica code reads.
  const T& primary() const { return (*this)[0]; }
};

// The component type of PerReplica<T> and Mirrored<T> (T), for templates
// that unwrap them (ReplicaContext::MergeCall); no `type` for any other V.
template <typename V>
struct ComponentOf {};
template <typename T>
struct ComponentOf<PerReplica<T>> {
  using type = T;
};
template <typename T>
struct ComponentOf<Mirrored<T>> {
  using type = T;
};

// Whether V is a PerReplica or a Mirrored.
template <typename V, typename = void>
struct IsDistributedValues : std::false_type {};
template <typename V>
struct IsDistributedValues<V, std::void_t<typename ComponentOf<V>::type>>
    : std::true_type {};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_VALUES_H_
