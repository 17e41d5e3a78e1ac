#include "rpc/ps_methods.h"

#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "proto/ps_service.pb.h"

namespace distrt::rpc {
namespace {

TEST(PsMethodsTest, AreTheServicesMethodsInItsOrder) {
  const google::protobuf::ServiceDescriptor* service =
      ps::GetStatusRequest::descriptor()->file()->FindServiceByName(
          "ParameterServer");
  ASSERT_NE(service, nullptr);
  ASSERT_EQ(service->method_count(), kNumPsMethods);
  for (int m = 0; m < kNumPsMethods; ++m) {
    EXPECT_EQ(service->method(m)->name(), kPsMethodNames[m]) << m;
    EXPECT_EQ(service->method(m)->name(),
              PsMethodName(static_cast<PsMethod>(m)))
        << m;
  }
}

}  // namespace
}  // namespace distrt::rpc
