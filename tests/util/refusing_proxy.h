#ifndef DISTRT_TESTS_UTIL_REFUSING_PROXY_H_
#define DISTRT_TESTS_UTIL_REFUSING_PROXY_H_

// A gRPC proxy in front of one ps task, on 127.0.0.1 at a port the OS
// picks: it passes every unary call on and back, except those whose method
// `refuse` picks, which it answers UNIMPLEMENTED (as a ps_server without
// that RPC would) and counts. Tests use it to stand for an older ps_server
// (no Bundle) or to prove that some calls never went over gRPC.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace distrt::testing {

class RefusingProxy : public grpc::CallbackGenericService {
 public:
  // `refuse(method)`, with the full method name ("/distrt.ps.../Bundle").
  using Refuse = std::function<bool(absl::string_view method)>;

  // Listening and forwarding to `target` ("host:port") until destroyed.
  static absl::StatusOr<std::unique_ptr<RefusingProxy>> Start(
      const std::string& target, Refuse refuse);
  ~RefusingProxy() override;

  std::string address() const;
  int refused() const { return refused_.load(); }

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;

 private:
  class Forward;
  RefusingProxy(const std::string& target, Refuse refuse);

  const Refuse refuse_;
  grpc::GenericStub stub_;
  std::atomic<int> refused_{0};
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_REFUSING_PROXY_H_
