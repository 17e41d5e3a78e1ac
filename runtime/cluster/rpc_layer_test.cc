#include "runtime/cluster/rpc_layer.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(RpcLayerTest, UnsetEmptyAndGrpcMeanGrpc) {
  EXPECT_EQ(*ParseRpcLayer(std::nullopt), RpcLayer::kGrpc);
  EXPECT_EQ(*ParseRpcLayer(std::string()), RpcLayer::kGrpc);
  EXPECT_EQ(*ParseRpcLayer(std::string("grpc")), RpcLayer::kGrpc);
}

TEST(RpcLayerTest, GrpcPlusTcpAsksForTheDataPlane) {
  EXPECT_EQ(*ParseRpcLayer(std::string("grpc+tcp")), RpcLayer::kGrpcTcp);
}

TEST(RpcLayerTest, OthersAreRefusedByName) {
  absl::StatusOr<RpcLayer> layer = ParseRpcLayer(std::string("grpc+verbs"));
  ASSERT_FALSE(layer.ok());
  EXPECT_EQ(layer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(layer.status().message().find("\"grpc+verbs\""), std::string::npos);
  EXPECT_NE(layer.status().message().find("grpc+tcp"), std::string::npos);
}

}  // namespace
}  // namespace distrt
