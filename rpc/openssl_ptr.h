#ifndef DISTRT_RPC_OPENSSL_PTR_H_
#define DISTRT_RPC_OPENSSL_PTR_H_

// OpenSslPtr<T, Free>: a std::unique_ptr that frees an OpenSSL object with
// its own free function, so that every early return releases what was made
// before it. Used wherever this package calls libcrypto directly.

#include <memory>

namespace distrt::rpc {

template <auto Free>
struct OpenSslFree {
  template <typename T>
  void operator()(T* object) const {
    Free(object);
  }
};

template <typename T, auto Free>
using OpenSslPtr = std::unique_ptr<T, OpenSslFree<Free>>;

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_OPENSSL_PTR_H_
