#ifndef DISTRT_RPC_POOLED_TENSOR_H_
#define DISTRT_RPC_POOLED_TENSOR_H_

// PooledTensor: a tensor field of a received request that DecodeWithTensors
// (rpc/wire_message.h) decodes into a buffer taken from a BufferPool, so that
// the ps's hot RPCs allocate nothing per request once the pool is warm.

#include <cstdint>

#include "absl/status/statusor.h"
#include "rpc/wire_message.h"
#include "runtime/util/buffer_pool.h"

namespace distrt::rpc {

struct PooledTensor {
  // `pool` is borrowed and must outlive this.
  PooledTensor(int field, BufferPool& pool) : tensor(field) {
    tensor.destination = [this, &pool](int64_t bytes) {
      buffer = pool.Get(bytes);
      return absl::StatusOr<char*>(buffer.data());
    };
  }
  PooledTensor(const PooledTensor&) = delete;
  PooledTensor& operator=(const PooledTensor&) = delete;

  IncomingTensor tensor;
  BufferPool::Buffer buffer;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_POOLED_TENSOR_H_
