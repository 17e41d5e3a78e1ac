// Fuzzes what a ps task does with the requests it receives: the request
// bytes decoded as rpc/ps_grpc_server.cc decodes them (DecodeWithTensors for
// the methods that carry tensors, gRPC's protobuf parsing for the others),
// then handled by rpc/ps_request_handler.h.
//
// Input: up to kMaxRequests requests, each
//   byte 0  the method, modulo 18, in the service's order: GetStatus,
//           Shutdown, CreateVariable, LookupVariable, ListVariables,
//           PullDense, PushDense, PullDenseBatch, PushDenseBatch, PullSparse,
//           PushSparse, CreateHashTable, PullHash, PushHash, Save,
//           CommitCheckpoint, Restore, Bundle (decoded as
//           rpc/bundle_message.h decodes it, each part then handled as the
//           RPC it names)
//   byte 1  how the message arrives: in one slice (0) or in slices of this
//           many bytes, as gRPC may hand it over
//   then a 2-byte little-endian length and the message's bytes.
//
// Each input starts from a fresh handler holding the fuzz model
// (checkpoint_fuzz_util.h): variables "dense", "emb" (rows [0, 6) of 10
// here), "bias", "ftrl_w", "global_step", tables "users" and "items".
// Checkpoint directories are confined to a scratch directory: a request's
// directory keeps only its letters, digits, '-' and '_' and names a
// directory in there.
//
// Checked beyond "no crash": errors have the codes the service promises
// (never INTERNAL or UNKNOWN); a pull asks for its response memory once,
// within the size limit, and as many bytes as the dtype and shape it
// reports; the response encodes (EncodeWithTensors) and decodes back to the
// same tensor.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/checkpoint_fuzz_util.h"
#include "fuzz/fuzz_util.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/ps_service.pb.h"
#include "proto/variable.pb.h"
#include "rpc/bundle_message.h"
#include "rpc/pooled_tensor.h"
#include "rpc/ps_methods.h"
#include "rpc/ps_request_handler.h"
#include "rpc/tensor_codec.h"
#include "rpc/wire_message.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/buffer_pool.h"
#include "runtime/util/file_system.h"

namespace distrt::fuzz {
namespace {

using rpc::DecodeWithTensors;
using rpc::EncodeWithTensors;
using rpc::IncomingTensor;
using rpc::PooledTensor;
using rpc::PsRequestHandler;

constexpr int kMaxRequests = 16;
constexpr int64_t kMaxResponseBytes = int64_t{1} << 20;
constexpr int64_t kMaxVariableBytes = int64_t{32} << 20;

// The message as gRPC could hand it over: in slices of `slice_bytes` (all
// in one when 0).
grpc::ByteBuffer Received(absl::string_view bytes, size_t slice_bytes) {
  if (slice_bytes == 0) slice_bytes = bytes.size();
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += slice_bytes) {
    const absl::string_view piece = bytes.substr(at, slice_bytes);
    slices.emplace_back(piece.data(), piece.size());
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// What the synchronous service does with a request: gRPC parses it; a
// message that does not parse never reaches the handler.
template <typename Request>
bool Parse(grpc::ByteBuffer* buffer, Request* request) {
  return grpc::SerializationTraits<Request>::Deserialize(buffer, request).ok();
}

void ExpectServiceError(const absl::Status& status, absl::string_view method) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kOutOfRange:  // an int64 increment that overflows
      return;
    default:
      FuzzFail(absl::StrCat(method, ": unexpected error ", status.ToString()));
  }
}

// Checkpoint requests also report what the file system and the checkpoint
// files say; only the codes that mean "a bug here" are refused.
void ExpectCheckpointError(const absl::Status& status,
                           absl::string_view method) {
  if (status.code() == absl::StatusCode::kInternal ||
      status.code() == absl::StatusCode::kUnknown) {
    FuzzFail(absl::StrCat(method, ": unexpected error ", status.ToString()));
  }
}

class Session {
 public:
  Session()
      : handler_(
            PsRequestHandler::Options{0, kMaxResponseBytes, kMaxVariableBytes}),
        root_(JoinPath(ScratchDir(), "ps")) {
    for (const VariableSpec& spec : FuzzModelVariables()) {
      ps::CreateVariableRequest request;
      VariableSpecToProto(spec, request.mutable_spec());
      if (spec.name == "emb") {
        request.mutable_rows()->set_begin(0);
        request.mutable_rows()->set_end(6);
      }
      ps::VariableInfo info;
      Require(handler_.CreateVariable(request, &info), "CreateVariable");
    }
    for (const HashEmbeddingSpec& spec : FuzzModelTables()) {
      ps::CreateHashTableRequest request;
      HashSpecToProto(spec, request.mutable_spec());
      ps::HashTableInfo info;
      Require(handler_.CreateHashTable(request, &info), "CreateHashTable");
    }
  }

  // Removes what checkpoint requests wrote.
  ~Session() {
    if (wrote_files_) ResetScratchDirectory(root_);
  }

  void Handle(int method, grpc::ByteBuffer* in);

 private:
  static void Require(const absl::Status& status, absl::string_view what) {
    if (!status.ok()) {
      FuzzFail(absl::StrCat("setting up the fuzz model: ", what, ": ",
                            status.ToString()));
    }
  }

  // A request's checkpoint directory, confined to root_.
  std::string Confine(const std::string& directory) {
    wrote_files_ = true;
    if (directory.empty()) return directory;  // refused as it is
    std::string name;
    for (char c : directory) {
      if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
          c == '_') {
        name.push_back(c);
      }
      if (name.size() == 40) break;
    }
    return name.empty() ? root_ : JoinPath(root_, name);
  }

  // Runs `pull` as the server's Respond does, with memory from the pool,
  // and checks what it produced.
  template <typename Response, typename Pull>
  void Respond(absl::string_view method, Pull pull);

  template <typename Pull>
  void PullRowsById(absl::string_view method, grpc::ByteBuffer* in, Pull pull);
  template <typename Push>
  void PushRowsById(absl::string_view method, grpc::ByteBuffer* in, Push push);

  PsRequestHandler handler_;
  BufferPool pool_;
  const std::string root_;
  bool wrote_files_ = false;
};

template <typename Response, typename Pull>
void Session::Respond(absl::string_view method, Pull pull) {
  int calls = 0;
  ps::DataType dtype = ps::DATA_TYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  int64_t bytes = -1;
  BufferPool::Buffer buffer;
  const absl::Status status = pull(
      [&](ps::DataType d, const std::vector<int64_t>& s, int64_t b) -> char* {
        ++calls;
        dtype = d;
        shape = s;
        bytes = b;
        buffer = pool_.Get(b < 0 ? 0 : b);
        return buffer.data();
      });
  if (!status.ok()) {
    ExpectServiceError(status, method);
    return;
  }
  if (calls != 1) {
    FuzzFail(
        absl::StrCat(method, " asked for response memory ", calls, " times"));
  }
  const int64_t element_bytes = dtype == ps::FLOAT32 ? 4
                                : dtype == ps::INT64 ? 8
                                                     : 0;
  absl::StatusOr<int64_t> elements = CountElements(shape);
  if (element_bytes == 0 || !elements.ok() ||
      *elements * element_bytes != bytes || bytes > kMaxResponseBytes) {
    FuzzFail(absl::StrCat(method, " responds with ", bytes, " bytes of ",
                          rpc::DataTypeName(dtype), " shape ",
                          ShapeString(shape)));
  }
  // Sent and received as the server and client do.
  grpc::ByteBuffer sent = EncodeWithTensors(
      Response(), {{1, dtype, shape, buffer.span(), nullptr}});
  std::vector<char> received;
  IncomingTensor values(1);
  values.destination = [&received](int64_t n) -> absl::StatusOr<char*> {
    received.resize(n);
    return received.data();
  };
  Response fields;
  const absl::Status decoded =
      DecodeWithTensors(&sent, "response", &fields, {&values});
  if (!decoded.ok() || values.dtype != dtype || values.shape != shape ||
      values.bytes != bytes ||
      (bytes > 0 && std::memcmp(received.data(), buffer.data(), bytes) != 0)) {
    FuzzFail(absl::StrCat(method, ": the response does not decode as sent: ",
                          decoded.ToString()));
  }
}

template <typename Pull>
void Session::PullRowsById(absl::string_view method, grpc::ByteBuffer* in,
                           Pull pull) {
  ps::PullSparseRequest request;
  PooledTensor ids(2, pool_);
  if (!DecodeWithTensors(in, method, &request, {&ids.tensor}).ok()) return;
  Respond<ps::PullSparseResponse>(
      method, [&](PsRequestHandler::ResponseTensor values) {
        return (handler_.*pull)(request, ids.tensor.view(), values);
      });
}

template <typename Push>
void Session::PushRowsById(absl::string_view method, grpc::ByteBuffer* in,
                           Push push) {
  ps::PushSparseRequest request;
  PooledTensor ids(2, pool_);
  PooledTensor gradients(3, pool_);
  if (!DecodeWithTensors(in, method, &request, {&ids.tensor, &gradients.tensor})
           .ok()) {
    return;
  }
  const absl::Status status =
      (handler_.*push)(request, ids.tensor.view(), gradients.tensor.view());
  if (!status.ok()) ExpectServiceError(status, method);
}

void Session::Handle(int method, grpc::ByteBuffer* in) {
  switch (method) {
    case rpc::kGetStatus: {
      ps::GetStatusRequest request;
      if (!Parse(in, &request)) return;
      ps::GetStatusResponse response;
      handler_.FillHoldings(&response);
      return;
    }
    case rpc::kShutdown: {
      ps::ShutdownRequest request;
      Parse(in, &request);
      return;
    }
    case rpc::kCreateVariable: {
      ps::CreateVariableRequest request;
      if (!Parse(in, &request)) return;
      ps::VariableInfo response;
      const absl::Status status = handler_.CreateVariable(request, &response);
      if (!status.ok()) ExpectServiceError(status, "CreateVariable");
      return;
    }
    case rpc::kLookupVariable: {
      ps::LookupVariableRequest request;
      if (!Parse(in, &request)) return;
      ps::VariableInfo response;
      const absl::Status status = handler_.LookupVariable(request, &response);
      if (!status.ok()) ExpectServiceError(status, "LookupVariable");
      return;
    }
    case rpc::kListVariables: {
      ps::ListVariablesRequest request;
      if (!Parse(in, &request)) return;
      ps::ListVariablesResponse response;
      handler_.ListVariables(&response);
      return;
    }
    case rpc::kPullDense: {
      ps::PullDenseRequest request;
      if (!DecodeWithTensors(in, "PullDense request", &request, {}).ok()) {
        return;
      }
      Respond<ps::PullDenseResponse>(
          "PullDense", [&](PsRequestHandler::ResponseTensor values) {
            return handler_.PullDense(request, values);
          });
      return;
    }
    case rpc::kPushDense: {
      ps::PushDenseRequest request;
      IncomingTensor values(3);
      values.in_place = true;
      if (!DecodeWithTensors(in, "PushDense request", &request, {&values})
               .ok()) {
        return;
      }
      // With a response, as the server calls it: return_values is fuzzed.
      ps::PushDenseResponse response;
      const absl::Status status =
          handler_.PushDense(request, values.view(), &response);
      if (!status.ok()) ExpectServiceError(status, "PushDense");
      return;
    }
    case rpc::kPullDenseBatch: {
      ps::PullDenseBatchRequest request;
      if (!Parse(in, &request)) return;
      ps::PullDenseBatchResponse response;
      const absl::Status status = handler_.PullDenseBatch(request, &response);
      if (!status.ok()) ExpectServiceError(status, "PullDenseBatch");
      return;
    }
    case rpc::kPushDenseBatch: {
      ps::PushDenseBatchRequest request;
      if (!Parse(in, &request)) return;
      const absl::Status status = handler_.PushDenseBatch(request);
      if (!status.ok()) ExpectServiceError(status, "PushDenseBatch");
      return;
    }
    case rpc::kPullSparse:
      PullRowsById("PullSparse request", in, &PsRequestHandler::PullSparse);
      return;
    case rpc::kPushSparse:
      PushRowsById("PushSparse request", in, &PsRequestHandler::PushSparse);
      return;
    case rpc::kCreateHashTable: {
      ps::CreateHashTableRequest request;
      if (!Parse(in, &request)) return;
      ps::HashTableInfo response;
      const absl::Status status = handler_.CreateHashTable(request, &response);
      if (!status.ok()) ExpectServiceError(status, "CreateHashTable");
      return;
    }
    case rpc::kPullHash:
      PullRowsById("PullHash request", in, &PsRequestHandler::PullHash);
      return;
    case rpc::kPushHash:
      PushRowsById("PushHash request", in, &PsRequestHandler::PushHash);
      return;
    case rpc::kBundle: {
      absl::StatusOr<std::vector<rpc::WirePart>> parts =
          rpc::DecodeBundle(in, "Bundle request");
      if (!parts.ok()) {
        ExpectCode(parts.status(), absl::StatusCode::kInvalidArgument,
                   "DecodeBundle");
        return;
      }
      for (rpc::WirePart& part : *parts) {
        // Bundles in a bundle are refused, so this recursion ends.
        for (int m = 0; m < rpc::kBundle; ++m) {
          if (part.method == rpc::kPsMethodNames[m]) {
            Handle(m, &part.message);
            break;
          }
        }
      }
      return;
    }
    case rpc::kSave: {
      ps::SaveRequest request;
      if (!Parse(in, &request)) return;
      request.set_directory(Confine(request.directory()));
      ps::SaveResponse response;
      const absl::Status status = handler_.Save(request, &response);
      if (!status.ok()) ExpectCheckpointError(status, "Save");
      return;
    }
    case rpc::kCommitCheckpoint: {
      ps::CommitCheckpointRequest request;
      if (!Parse(in, &request)) return;
      request.set_directory(Confine(request.directory()));
      ps::CommitCheckpointResponse response;
      const absl::Status status = handler_.CommitCheckpoint(request, &response);
      if (!status.ok()) ExpectCheckpointError(status, "CommitCheckpoint");
      return;
    }
    case rpc::kRestore: {
      ps::RestoreRequest request;
      if (!Parse(in, &request)) return;
      request.set_directory(Confine(request.directory()));
      ps::RestoreResponse response;
      const absl::Status status = handler_.Restore(request, &response);
      if (!status.ok()) ExpectCheckpointError(status, "Restore");
      return;
    }
  }
}

void Run(const uint8_t* data, size_t size) {
  ByteReader input(data, size);
  Session session;
  for (int i = 0; i < kMaxRequests && !input.empty(); ++i) {
    const int method = input.Byte() % rpc::kNumPsMethods;
    const size_t slice_bytes = input.Byte();
    const absl::string_view message = input.Chunk();
    grpc::ByteBuffer received = Received(message, slice_bytes);
    session.Handle(method, &received);
  }
}

}  // namespace
}  // namespace distrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  distrt::fuzz::Run(data, size);
  return 0;
}
