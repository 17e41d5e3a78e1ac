#include "tests/util/refusing_proxy.h"

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distrt::testing {

// One unary call: read the request, pass it on, write what came back.
class RefusingProxy::Forward : public grpc::ServerGenericBidiReactor {
 public:
  Forward(RefusingProxy* proxy, std::string method)
      : proxy_(proxy), method_(std::move(method)) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      return Finish(grpc::Status(grpc::StatusCode::INTERNAL, "no request"));
    }
    if (proxy_->refuse_(method_)) {
      ++proxy_->refused_;
      return Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""));
    }
    context_.set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(30));
    proxy_->stub_.UnaryCall(&context_, method_, grpc::StubOptions(), &request_,
                            &response_, [this](grpc::Status s) {
                              if (!s.ok()) return Finish(s);
                              StartWriteAndFinish(&response_,
                                                  grpc::WriteOptions(), s);
                            });
  }
  void OnDone() override { delete this; }

 private:
  RefusingProxy* const proxy_;
  const std::string method_;
  grpc::ClientContext context_;
  grpc::ByteBuffer request_, response_;
};

RefusingProxy::RefusingProxy(const std::string& target, Refuse refuse)
    : refuse_(std::move(refuse)),
      stub_(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())) {}

absl::StatusOr<std::unique_ptr<RefusingProxy>> RefusingProxy::Start(
    const std::string& target, Refuse refuse) {
  std::unique_ptr<RefusingProxy> proxy(
      new RefusingProxy(target, std::move(refuse)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &proxy->port_);
  builder.RegisterCallbackGenericService(proxy.get());
  proxy->server_ = builder.BuildAndStart();
  if (proxy->server_ == nullptr || proxy->port_ <= 0) {
    return absl::UnavailableError("the proxy could not listen on 127.0.0.1");
  }
  return proxy;
}

RefusingProxy::~RefusingProxy() {
  if (server_ != nullptr) server_->Shutdown();
}

std::string RefusingProxy::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

grpc::ServerGenericBidiReactor* RefusingProxy::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  return new Forward(this, context->method());
}

}  // namespace distrt::testing
