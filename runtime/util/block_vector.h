#ifndef DISTRT_RUNTIME_UTIL_BLOCK_VECTOR_H_
#define DISTRT_RUNTIME_UTIL_BLOCK_VECTOR_H_

// BlockVector<T>: a vector of trivially copyable T in fixed blocks of
// kBlockElements, for per-row arrays of tables of tens of millions of rows.
// A std::vector doubles its capacity as it grows, so it holds up to twice
// what it stores and, while it moves, three times: 24 bytes of metadata a
// row became up to 48. A BlockVector holds what it stores plus at most two
// blocks, and never moves an element (no copy of the whole when it grows).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace distrt {

template <typename T>
class BlockVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  static constexpr int64_t kBlockElements = int64_t{1} << 16;

  BlockVector() = default;
  BlockVector(BlockVector&&) noexcept = default;
  BlockVector& operator=(BlockVector&&) noexcept = default;

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](int64_t i) {
    return blocks_[i / kBlockElements][i % kBlockElements];
  }
  const T& operator[](int64_t i) const {
    return blocks_[i / kBlockElements][i % kBlockElements];
  }

  void push_back(const T& value) {
    if (size_ == static_cast<int64_t>(blocks_.size()) * kBlockElements) {
      // Uninitialised (C++17 has no make_unique_for_overwrite): every
      // element is written before it is read.
      blocks_.push_back(std::unique_ptr<T[]>(new T[kBlockElements]));
    }
    (*this)[size_++] = value;
  }
  // Frees the last block when two are empty, so that a size going up and
  // down across a block's edge does not allocate each time.
  void pop_back() {
    --size_;
    const size_t needed = (size_ + kBlockElements - 1) / kBlockElements + 1;
    if (blocks_.size() > needed) blocks_.pop_back();
  }
  void clear() {
    blocks_.clear();
    size_ = 0;
  }
  // `n` copies of `value`, in exactly as many blocks as they need.
  void assign(int64_t n, const T& value) {
    clear();
    blocks_.reserve((n + kBlockElements - 1) / kBlockElements);
    for (int64_t i = 0; i < n; ++i) push_back(value);
  }
  // Every element in order into `out` (appended).
  template <typename U>
  void AppendTo(std::vector<U>& out) const {
    out.reserve(out.size() + size_);
    for (int64_t i = 0; i < size_; ++i)
      out.push_back(static_cast<U>((*this)[i]));
  }
  int64_t bytes() const {
    return static_cast<int64_t>(blocks_.size()) * kBlockElements * sizeof(T);
  }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  int64_t size_ = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_BLOCK_VECTOR_H_
