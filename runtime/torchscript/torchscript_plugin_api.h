#ifndef DISTRT_RUNTIME_TORCHSCRIPT_TORCHSCRIPT_PLUGIN_API_H_
#define DISTRT_RUNTIME_TORCHSCRIPT_TORCHSCRIPT_PLUGIN_API_H_

// The C interface between TorchScriptModel (in every worker, free of
// LibTorch) and libdistrt_torchscript.so, the plugin that links LibTorch
// and is loaded (dlopen) only when a job asks for --model=torchscript.
// LibTorch takes about a second to load, which every worker, evaluator and
// test process would otherwise pay at start-up. Plain C types only, so the
// two sides share no C++ ABI beyond this header.

#include <stdint.h>

extern "C" {

// The losses, as TorchScriptLoss numbers them.
enum DistrtTorchScriptLoss {
  kDistrtSoftmaxCrossEntropy = 0,
  kDistrtSigmoidCrossEntropy = 1,
  kDistrtMeanSquaredError = 2,
};

struct DistrtTorchScriptParameter {
  const char* name;      // "fc1.weight"
  int rank;              // shape's length
  const int64_t* shape;  // rank entries
  int64_t numel;
  const float* values;  // numel, as saved in the file; null unless float32
  int is_float32;       // 1 for float32; else `dtype` names the type
  const char* dtype;
};

// The trainable parameters (requires_grad in the file), in
// named_parameters() order; frozen ones keep their saved values. A module
// with embedding tables (an exported embedding_dims() -> List[int]) has
// their widths; its forward takes the tables' pooled rows instead of x
// (or, loaded with group dims, after x: forward(dense, embeddings)).
struct DistrtTorchScriptModuleInfo {
  int num_parameters;
  const DistrtTorchScriptParameter* parameters;
  int num_embeddings;
  const int64_t* embedding_dims;  // num_embeddings entries
  int outputs;                    // forward's columns
};

struct DistrtTorchScriptApi {
  // kDistrtTorchScriptApiVersion; a plugin of another version is refused.
  int version;
  // Loads the module at `path`, sets LibTorch's intra-op threads (a
  // process-wide setting) to `threads` when it is >= 1, and runs forward
  // on x of [1, num_features] (or on one zero row per embedding table) to
  // learn its outputs; a module whose buffers forward changes in training
  // is refused, naming the buffer. With num_groups >= 1 (a feature spec's
  // embedding groups, of widths group_dims), forward must take
  // (dense: Tensor, embeddings: List[Tensor]), dense being x of
  // num_features (>= 0) columns, and embedding_dims() must return
  // group_dims. Returns the module, or null with *error set (a message for
  // free_error). `info` stays valid until free_module.
  void* (*load)(const char* path, int64_t num_features, int num_groups,
                const int64_t* group_dims, int threads,
                DistrtTorchScriptModuleInfo* info, char** error);
  // One step: x [batch, num_features] (ignored by a module with embedding
  // tables but no groups, which gets embeddings[t] of
  // [batch, embedding_dims[t]] instead; a module with groups gets both)
  // and labels [batch]; parameter i's values at parameters[i]. Writes the
  // summed loss, predictions (batch * outputs: softmax probabilities,
  // sigmoid probabilities, or the values) and, with with_gradients,
  // gradients[i] (parameter i's numel) and embedding_gradients[t] (the
  // loss's gradient with respect to embeddings[t]). Returns 0, or -1 with
  // *error set. Safe to call from several threads at once.
  int (*step)(void* module, int loss, const float* x, int64_t batch,
              const float* labels, const float* const* parameters,
              const float* const* embeddings, int with_gradients,
              double* loss_sum, float* predictions, float* const* gradients,
              float* const* embedding_gradients, char** error);
  void (*free_module)(void* module);
  void (*free_error)(char* error);
};

// The one symbol the plugin exports.
const DistrtTorchScriptApi* distrt_torchscript_api(void);

}  // extern "C"

inline constexpr int kDistrtTorchScriptApiVersion = 3;

#endif  // DISTRT_RUNTIME_TORCHSCRIPT_TORCHSCRIPT_PLUGIN_API_H_
