// libdistrt_torchscript.so: LibTorch behind the C interface of
// torchscript_plugin_api.h. Only this file includes torch.

#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/torchscript/torchscript_plugin_api.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace {

// A message for the caller to free_error; null when out of memory (the
// caller then reports an unknown error).
char* Error(const std::string& message) {
  char* copy = static_cast<char*>(std::malloc(message.size() + 1));
  if (copy != nullptr) std::memcpy(copy, message.c_str(), message.size() + 1);
  return copy;
}

// LibTorch reports errors as exceptions. A c10::Error's message without its
// C++ backtrace is the reason (and TorchScript's own trace of the line).
std::string Describe(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) {
    return torch_error->what_without_backtrace();
  }
  return e.what();
}

std::string ShapeString(c10::IntArrayRef sizes) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << "]";
  return out.str();
}

// One copy of the module per concurrent step: steps run on every replica's
// thread at once, and a module's parameters are its state.
struct Instance {
  torch::jit::Module module;
  // The trainable parameters, in named_parameters() order.
  std::vector<torch::Tensor> parameters;
};

// What forward takes: x [batch, num_features]; one pooled [batch, dim]
// tensor per embedding table (over LIBSVM ids); or, with a feature spec's
// embedding groups, dense [batch, num_features] and one per group.
enum class Inputs { kX, kEmbeddings, kDenseAndEmbeddings };

struct Module {
  torch::jit::Module prototype;
  int64_t num_features = 0;
  Inputs inputs = Inputs::kX;
  // Of the embedding tables; empty for a module that takes x.
  std::vector<int64_t> embedding_dims;
  int outputs = 0;
  // named_parameters() positions of the trainable parameters (those with
  // requires_grad in the file: a frozen one keeps its saved values).
  std::vector<size_t> trainable;
  // What DistrtTorchScriptModuleInfo points into: the trainable parameters.
  std::vector<std::string> names;
  std::vector<std::string> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t> numels;
  std::vector<std::vector<float>> values;
  std::vector<DistrtTorchScriptParameter> parameters;

  std::mutex mu;
  std::vector<std::unique_ptr<Instance>> idle_instances;

  // A copy of the module for one step; throws what LibTorch throws.
  std::unique_ptr<Instance> Acquire() {
    // Also serialises clone(), which registers the copy's class in the
    // compilation unit all copies share, without a lock of its own.
    std::lock_guard<std::mutex> lock(mu);
    if (!idle_instances.empty()) {
      std::unique_ptr<Instance> instance = std::move(idle_instances.back());
      idle_instances.pop_back();
      return instance;
    }
    auto instance = std::make_unique<Instance>();
    {
      // Cloned with autograd on, the copies would be results of a clone op
      // rather than leaves, and backward would not fill their .grad.
      torch::NoGradGuard no_grad;
      instance->module = prototype.clone();
    }
    std::vector<torch::Tensor> all;
    for (const auto& p : instance->module.named_parameters(/*recurse=*/true)) {
      all.push_back(p.value);
    }
    for (size_t i : trainable) {
      all[i].set_requires_grad(true);
      instance->parameters.push_back(all[i]);
    }
    return instance;
  }
  void Release(std::unique_ptr<Instance> instance) {
    std::lock_guard<std::mutex> lock(mu);
    idle_instances.push_back(std::move(instance));
  }

  // forward's arguments: x [batch, num_features], the list of the
  // tables' [batch, dim] inputs, or both.
  std::vector<c10::IValue> Arguments(torch::Tensor x,
                                     const std::vector<torch::Tensor>& tables) {
    if (inputs == Inputs::kX) return {std::move(x)};
    c10::List<torch::Tensor> list;
    for (const torch::Tensor& t : tables) list.push_back(t);
    if (inputs == Inputs::kEmbeddings) return {c10::IValue(std::move(list))};
    return {std::move(x), c10::IValue(std::move(list))};
  }

  // What forward was given, for messages.
  std::string InputsDescription(int64_t batch) const {
    const std::string x = "float32 [" + std::to_string(batch) + ", " +
                          std::to_string(num_features) + "]";
    if (inputs == Inputs::kX) return "x " + x;
    std::string text = "embeddings [";
    for (size_t t = 0; t < embedding_dims.size(); ++t) {
      text += (t ? ", [" : "[") + std::to_string(batch) + ", " +
              std::to_string(embedding_dims[t]) + "]";
    }
    text += "]";
    if (inputs == Inputs::kEmbeddings) return text;
    return "dense " + x + " and " + text;
  }
};

// The module's embedding tables: what its exported embedding_dims()
// returns, each in [1, 2^20]; none without that method. Throws what LibTorch
// throws, or std::invalid_argument.
std::vector<int64_t> EmbeddingDims(torch::jit::Module& module) {
  c10::optional<torch::jit::Method> method =
      module.find_method("embedding_dims");
  if (!method.has_value()) return {};
  c10::IValue value = (*method)(std::vector<c10::IValue>{});
  if (!value.isIntList()) {
    throw std::invalid_argument(
        "embedding_dims() must return List[int], the width of each table");
  }
  std::vector<int64_t> dims = value.toIntVector();
  if (dims.empty()) {
    throw std::invalid_argument(
        "embedding_dims() returned no tables; leave it out for a module "
        "that takes x");
  }
  for (int64_t dim : dims) {
    if (dim < 1 || dim > (int64_t{1} << 20)) {
      throw std::invalid_argument("embedding_dims() has a width of " +
                                  std::to_string(dim) +
                                  "; each must be in [1, 1048576]");
    }
  }
  return dims;
}

std::string DimsString(const std::vector<int64_t>& dims) {
  return ShapeString(c10::IntArrayRef(dims));
}

// forward's arguments after self, as "name: Type" for messages and their
// types. Throws what LibTorch throws.
struct ForwardArgument {
  std::string text;
  c10::TypePtr type;
};
std::vector<ForwardArgument> ForwardArguments(torch::jit::Module& module) {
  const c10::FunctionSchema& schema =
      module.get_method("forward").function().getSchema();
  std::vector<ForwardArgument> arguments;
  for (size_t i = 1; i < schema.arguments().size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    arguments.push_back(
        {a.name() + ": " + a.type()->annotation_str(), a.type()});
  }
  return arguments;
}

std::string Signature(const std::vector<ForwardArgument>& arguments) {
  std::string text = "forward(";
  for (size_t i = 0; i < arguments.size(); ++i) {
    text += (i ? ", " : "") + arguments[i].text;
  }
  return text + ")";
}

bool IsTensorList(const c10::TypePtr& type) {
  const auto list = type->cast<c10::ListType>();
  return list != nullptr &&
         list->getElementType()->kind() == c10::TypeKind::TensorType;
}

// Decides what forward takes (module.inputs, module.embedding_dims) from
// the module and the feature spec's groups (`group_dims`, empty without
// them). With groups, forward must take (dense: Tensor, embeddings:
// List[Tensor]) and embedding_dims() return the groups' dims; without, a
// module that exports embedding_dims() takes the tables' list, and a
// forward of that two-argument shape is refused as needing groups. Throws
// std::invalid_argument saying which, or what LibTorch throws.
void DecideInputs(Module& module, const std::vector<int64_t>& group_dims) {
  const std::vector<ForwardArgument> arguments =
      ForwardArguments(module.prototype);
  const bool dense_and_embeddings =
      arguments.size() == 2 &&
      arguments[0].type->kind() == c10::TypeKind::TensorType &&
      IsTensorList(arguments[1].type);
  module.embedding_dims = EmbeddingDims(module.prototype);
  if (group_dims.empty()) {
    if (dense_and_embeddings) {
      throw std::invalid_argument(
          Signature(arguments) +
          " takes a feature spec's embedding groups (--features=SPEC.json, "
          "one group per table of embedding_dims()), and none were given");
    }
    module.inputs =
        module.embedding_dims.empty() ? Inputs::kX : Inputs::kEmbeddings;
    return;
  }
  if (!dense_and_embeddings) {
    throw std::invalid_argument(
        Signature(arguments) +
        " does not take the feature spec's embedding groups: it must be "
        "forward(dense: Tensor, embeddings: List[Tensor]), dense float32 "
        "[batch, " +
        std::to_string(module.num_features) +
        "] and one pooled float32 [batch, dim] tensor per group, of dims " +
        DimsString(group_dims));
  }
  if (module.embedding_dims != group_dims) {
    throw std::invalid_argument(
        "the feature spec's embedding groups have dims " +
        DimsString(group_dims) + " but the module's embedding_dims() " +
        (module.embedding_dims.empty()
             ? std::string("is missing (export it: @torch.jit.export)")
             : "returns " + DimsString(module.embedding_dims)) +
        "; it must return one dim per group, in the spec's order");
  }
  module.inputs = Inputs::kDenseAndEmbeddings;
}

// x for a forward of `batch` examples: zeros, or for batch 2 two different
// rows (so that statistics over the batch move). Undefined for a module
// with embedding tables over LIBSVM ids, which does not take x: its
// num_features may be any feature id's bound.
torch::Tensor ProbeX(const Module& module, int64_t batch) {
  if (module.inputs == Inputs::kEmbeddings) return torch::Tensor();
  torch::Tensor x = torch::zeros({batch, module.num_features});
  if (batch > 1) x[1].fill_(1.0);
  return x;
}

std::vector<torch::Tensor> ProbeTables(const Module& module, int64_t batch) {
  std::vector<torch::Tensor> tables;
  for (int64_t dim : module.embedding_dims) {
    torch::Tensor t = torch::zeros({batch, dim});
    if (batch > 1) t[1].fill_(1.0);
    tables.push_back(t);
  }
  return tables;
}

// The buffers (batch norm's running statistics, say) that a forward in
// training mode changes, by name. Parameters are what distrt trains and
// shares; such buffers would drift apart in every replica's copy and be
// lost with the process, so modules with them are refused. Throws what
// LibTorch throws.
std::vector<std::string> BuffersForwardChanges(Module& module) {
  torch::NoGradGuard no_grad;
  torch::jit::Module copy = module.prototype.clone();
  std::vector<std::pair<std::string, torch::Tensor>> before;
  for (const auto& b : copy.named_buffers(/*recurse=*/true)) {
    before.emplace_back(b.name, b.value.clone());
  }
  if (before.empty()) return {};
  copy.train(true);
  // Two examples: batch norm refuses one in training.
  copy.forward(module.Arguments(ProbeX(module, 2), ProbeTables(module, 2)));
  std::vector<std::string> changed;
  size_t i = 0;
  for (const auto& b : copy.named_buffers(/*recurse=*/true)) {
    if (!b.value.equal(before[i++].second)) changed.push_back(b.name);
  }
  return changed;
}

// Reads the TorchScript file at `path` into `module.prototype`; on failure
// sets `*error` (naming a file from a newer PyTorch as such) and returns
// false.
bool LoadPrototype(const char* path, Module& module, char** error) {
  try {
    module.prototype = torch::jit::load(path);
    return true;
  } catch (const std::exception& e) {
    const std::string why = Describe(e);
    if (why.find("maximum supported version") != std::string::npos) {
      *error = Error("written by a newer PyTorch than this LibTorch (" +
                     std::to_string(TORCH_VERSION_MAJOR) + "." +
                     std::to_string(TORCH_VERSION_MINOR) +
                     ") can read; save the module with that PyTorch "
                     "version (Debian's python3-torch): " +
                     why);
      return false;
    }
    *error = Error(
        "not a TorchScript file (torch.jit.script(model).save(path) writes "
        "one): " +
        why);
    return false;
  }
}

// Fills in `module`'s trainable parameters (names, dtypes, shapes, saved
// values) and the DistrtTorchScriptParameter views of them. Throws what
// LibTorch throws.
void ListTrainableParameters(Module& module) {
  size_t position = 0;
  for (const auto& p : module.prototype.named_parameters(true)) {
    if (!p.value.requires_grad()) {  // frozen: not a variable
      ++position;
      continue;
    }
    module.trainable.push_back(position++);
    module.names.push_back(p.name);
    module.shapes.emplace_back(p.value.sizes().begin(), p.value.sizes().end());
    module.numels.push_back(p.value.numel());
    module.dtypes.push_back(std::string(c10::toString(p.value.scalar_type())));
    if (p.value.scalar_type() == torch::kFloat32) {
      torch::Tensor values = p.value.detach().contiguous();
      module.values.emplace_back(values.data_ptr<float>(),
                                 values.data_ptr<float>() + values.numel());
    } else {
      module.values.emplace_back();
    }
  }
  for (size_t i = 0; i < module.names.size(); ++i) {
    DistrtTorchScriptParameter p{};
    p.name = module.names[i].c_str();
    p.rank = static_cast<int>(module.shapes[i].size());
    p.shape = module.shapes[i].data();
    p.numel = module.numels[i];
    p.is_float32 = module.dtypes[i] == "Float";
    p.values = p.is_float32 ? module.values[i].data() : nullptr;
    p.dtype = module.dtypes[i].c_str();
    module.parameters.push_back(p);
  }
}

// Runs forward in evaluation mode on one example, which must give
// [1, outputs] float32, and sets `module.outputs`; on failure sets `*error`
// and returns false.
bool ProbeOutputs(Module& module, char** error) {
  try {
    torch::NoGradGuard no_grad;
    module.prototype.eval();
    torch::Tensor out = module.prototype
                            .forward(module.Arguments(ProbeX(module, 1),
                                                      ProbeTables(module, 1)))
                            .toTensor();
    if (out.dim() != 2 || out.size(0) != 1) {
      *error = Error("forward of " + module.InputsDescription(1) +
                     " returned shape " + ShapeString(out.sizes()) +
                     "; it must return [batch, outputs]");
      return false;
    }
    if (out.scalar_type() != torch::kFloat32) {
      *error =
          Error("forward of " + module.InputsDescription(1) + " returned " +
                std::string(c10::toString(out.scalar_type())) +
                "; it must return float32");
      return false;
    }
    module.outputs = static_cast<int>(out.size(1));
    return true;
  } catch (const std::exception& e) {
    *error = Error("forward of " + module.InputsDescription(1) +
                   " failed: " + Describe(e));
    return false;
  }
}

// Refuses a module whose forward in training changes buffers
// (BuffersForwardChanges): sets `*error` and returns false.
bool CheckNoBufferChanges(Module& module, char** error) {
  try {
    std::vector<std::string> changed = BuffersForwardChanges(module);
    if (changed.empty()) return true;
    std::string names;
    for (const std::string& name : changed) {
      names += (names.empty() ? "" : ", ") + name;
    }
    *error =
        Error("forward changes the buffer(s) " + names +
              " in training (batch norm's running statistics, say); distrt "
              "trains parameters only, so such a module is refused: use "
              "track_running_stats=False, or a layer without state such as "
              "LayerNorm (docs/torchscript.md)");
    return false;
  } catch (const std::exception& e) {
    *error =
        Error("forward in training mode of " + module.InputsDescription(2) +
              " (to check which buffers it changes) failed: " + Describe(e));
    return false;
  }
}

// Sets LibTorch's intra-op threads where `threads` >= 1; on failure sets
// `*error` and returns false.
bool SetIntraOpThreads(int threads, char** error) {
  try {
    if (threads >= 1) at::set_num_threads(threads);
    return true;
  } catch (const std::exception& e) {
    *error = Error("setting LibTorch's intra-op threads to " +
                   std::to_string(threads) + " failed: " + Describe(e));
    return false;
  }
}

// Load's work; throws what LibTorch throws only where Load says so.
void* LoadOrThrow(const char* path, int64_t num_features,
                  const std::vector<int64_t>& group_dims, int threads,
                  DistrtTorchScriptModuleInfo* info, char** error) {
  auto module = std::make_unique<Module>();
  module->num_features = num_features;
  if (!LoadPrototype(path, *module, error)) return nullptr;
  try {
    ListTrainableParameters(*module);
    DecideInputs(*module, group_dims);
  } catch (const std::exception& e) {
    *error = Error(Describe(e));
    return nullptr;
  }
  if (!ProbeOutputs(*module, error)) return nullptr;
  if (!CheckNoBufferChanges(*module, error)) return nullptr;
  // Process-wide, so only once the module is known to be good.
  if (!SetIntraOpThreads(threads, error)) return nullptr;
  info->num_parameters = static_cast<int>(module->parameters.size());
  info->parameters = module->parameters.data();
  info->num_embeddings = static_cast<int>(module->embedding_dims.size());
  info->embedding_dims = module->embedding_dims.data();
  info->outputs = module->outputs;
  return module.release();
}

void* Load(const char* path, int64_t num_features, int num_groups,
           const int64_t* group_dims, int threads,
           DistrtTorchScriptModuleInfo* info, char** error) {
#if defined(__SANITIZE_ADDRESS__)
  // Under --config=asan: LeakSanitizer's end-of-process check crashes
  // stopping LibTorch's worker threads (seen with a CNN: "Tracer caught
  // signal 11"), and LibTorch 1.13 leaks its zip reader when it refuses a
  // file from a newer PyTorch. So a process that uses LibTorch checks for
  // leaks once, now, before LibTorch runs, and not at exit.
  static const bool checked_before_libtorch = [] {
    __lsan_do_leak_check();
    return true;
  }();
  (void)checked_before_libtorch;
#endif
  // No exception may leave this extern "C" function: it would abort.
  try {
    const std::vector<int64_t> dims(group_dims,
                                    group_dims + std::max(num_groups, 0));
    return LoadOrThrow(path, num_features, dims, threads, info, error);
  } catch (const std::exception& e) {
    *error = Error("loading the module failed: " + Describe(e));
  } catch (...) {
    *error = Error("loading the module failed");
  }
  return nullptr;
}

// The tables' inputs of a step: each caller's [batch, dim] rows as a leaf,
// so that backward gives the loss's gradient for each pooled row, which
// the caller scatters to the table's rows.
std::vector<torch::Tensor> EmbeddingInputs(const Module& module,
                                           const float* const* embeddings,
                                           int64_t batch, bool with_gradients) {
  std::vector<torch::Tensor> tables;
  for (size_t t = 0; t < module.embedding_dims.size(); ++t) {
    tables.push_back(torch::from_blob(const_cast<float*>(embeddings[t]),
                                      {batch, module.embedding_dims[t]},
                                      torch::kFloat32)
                         .requires_grad_(with_gradients));
  }
  return tables;
}

// Copies the caller's parameter values into the instance's parameters and
// clears their gradients.
void SetParameters(Instance& instance, const float* const* parameters) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < instance.parameters.size(); ++i) {
    torch::Tensor& p = instance.parameters[i];
    p.copy_(torch::from_blob(const_cast<float*>(parameters[i]), p.sizes(),
                             torch::kFloat32));
    p.mutable_grad() = torch::Tensor();
  }
}

// Whether forward's `out` is [batch, outputs] float32; if not, sets
// `*error`.
bool CheckOutput(const Module& module, const torch::Tensor& out, int64_t batch,
                 char** error) {
  if (out.dim() != 2 || out.size(0) != batch || out.size(1) != module.outputs) {
    *error = Error("forward returned shape " + ShapeString(out.sizes()) +
                   " for a batch of " + std::to_string(batch) + "; expected [" +
                   std::to_string(batch) + ", " +
                   std::to_string(module.outputs) + "]");
    return false;
  }
  if (out.scalar_type() != torch::kFloat32) {
    *error = Error("forward returned " +
                   std::string(c10::toString(out.scalar_type())) +
                   "; it must return float32");
    return false;
  }
  return true;
}

// The summed loss of `loss_kind` over forward's `out` against `targets`,
// and the predictions; an unknown loss sets `*error` and returns false.
bool ComputeLoss(int loss_kind, const torch::Tensor& out,
                 const torch::Tensor& targets, torch::Tensor& loss,
                 torch::Tensor& predictions, char** error) {
  switch (loss_kind) {
    case kDistrtSoftmaxCrossEntropy:
      loss = torch::nn::functional::cross_entropy(
          out, targets.to(torch::kInt64),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(
              torch::kSum));
      predictions = torch::softmax(out, 1);
      return true;
    case kDistrtSigmoidCrossEntropy:
      loss = torch::nn::functional::binary_cross_entropy_with_logits(
          out.squeeze(1), targets,
          torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions()
              .reduction(torch::kSum));
      predictions = torch::sigmoid(out.squeeze(1));
      return true;
    case kDistrtMeanSquaredError:
      loss = (out.squeeze(1) - targets).pow(2).sum();
      predictions = out.squeeze(1);
      return true;
    default:
      *error = Error("unknown loss " + std::to_string(loss_kind));
      return false;
  }
}

// Copies each leaf's gradient after backward into `out`, zeros for one
// that forward does not use.
void CopyGradients(const std::vector<torch::Tensor>& leaves,
                   float* const* out) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    const torch::Tensor& grad = leaves[i].grad();
    const int64_t n = leaves[i].numel();
    if (!grad.defined()) {  // one forward does not use
      std::memset(out[i], 0, n * sizeof(float));
      continue;
    }
    torch::Tensor g = grad.contiguous();
    std::memcpy(out[i], g.data_ptr<float>(), n * sizeof(float));
  }
}

// The step with a module instance of its own; throws what LibTorch throws.
int Step(Module& module, Instance& instance, int loss_kind, const float* x,
         int64_t batch, const float* labels, const float* const* parameters,
         const float* const* embeddings, int with_gradients, double* loss_sum,
         float* predictions_out, float* const* gradients,
         float* const* embedding_gradients, char** error) {
  torch::Tensor input;
  if (module.inputs != Inputs::kEmbeddings) {
    // No dense features (a spec with categorical ones only): x may be null.
    input =
        module.num_features == 0
            ? torch::zeros({batch, 0})
            : torch::from_blob(const_cast<float*>(x),
                               {batch, module.num_features}, torch::kFloat32);
  }
  const std::vector<torch::Tensor> tables =
      EmbeddingInputs(module, embeddings, batch, with_gradients != 0);
  torch::Tensor targets =
      torch::from_blob(const_cast<float*>(labels), {batch}, torch::kFloat32);
  SetParameters(instance, parameters);
  // Training or evaluation: dropout and batch norm behave accordingly.
  instance.module.train(with_gradients != 0);
  std::optional<torch::NoGradGuard> no_grad;
  if (!with_gradients) no_grad.emplace();
  torch::Tensor out =
      instance.module.forward(module.Arguments(input, tables)).toTensor();
  if (!CheckOutput(module, out, batch, error)) return -1;
  torch::Tensor loss, predictions;
  if (!ComputeLoss(loss_kind, out, targets, loss, predictions, error)) {
    return -1;
  }
  *loss_sum = loss.item<double>();
  predictions = predictions.detach().contiguous();
  std::memcpy(predictions_out, predictions.data_ptr<float>(),
              predictions.numel() * sizeof(float));
  if (!with_gradients) return 0;
  loss.backward();
  CopyGradients(instance.parameters, gradients);
  CopyGradients(tables, embedding_gradients);
  return 0;
}

int StepApi(void* handle, int loss_kind, const float* x, int64_t batch,
            const float* labels, const float* const* parameters,
            const float* const* embeddings, int with_gradients,
            double* loss_sum, float* predictions, float* const* gradients,
            float* const* embedding_gradients, char** error) {
  Module& module = *static_cast<Module*>(handle);
  // No exception may leave this extern "C" function: it would abort.
  std::unique_ptr<Instance> instance;
  int result = -1;
  try {
    instance = module.Acquire();
    result = Step(module, *instance, loss_kind, x, batch, labels, parameters,
                  embeddings, with_gradients, loss_sum, predictions, gradients,
                  embedding_gradients, error);
  } catch (const std::exception& e) {
    *error = Error("a step failed: " + Describe(e));
    result = -1;
  } catch (...) {
    *error = Error("a step failed");
    result = -1;
  }
  try {
    if (instance != nullptr) module.Release(std::move(instance));
  } catch (...) {
    // Out of memory keeping the copy for reuse: it is freed instead.
  }
  return result;
}

void FreeModule(void* module) { delete static_cast<Module*>(module); }
void FreeError(char* error) { std::free(error); }

const DistrtTorchScriptApi kApi = {kDistrtTorchScriptApiVersion, &Load,
                                   &StepApi, &FreeModule, &FreeError};

}  // namespace

extern "C" __attribute__((visibility("default"))) const DistrtTorchScriptApi*
distrt_torchscript_api(void) {
  return &kApi;
}
