// libdistrt_torchscript.so: LibTorch behind the C interface of
// torchscript_plugin_api.h. Only this file includes torch.

#include <torch/script.h>
#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/torchscript/torchscript_plugin_api.h"

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

struct Module {
  torch::jit::Module prototype;
  int64_t num_features = 0;
  int outputs = 0;
  // named_parameters() positions of the trainable parameters (those with
  // requires_grad in the file: a frozen one keeps its saved values).
  std::vector<size_t> trainable;
  // What DistrtTorchScriptModuleInfo points into: the trainable parameters.
  std::vector<std::string> names;
  std::vector<std::string> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;
  std::vector<DistrtTorchScriptParameter> parameters;

  std::mutex mu;
  std::vector<std::unique_ptr<Instance>> free;

  // A copy of the module for one step; throws what LibTorch throws.
  std::unique_ptr<Instance> Acquire() {
    // Also serialises clone(), which registers the copy's class in the
    // compilation unit all copies share, without a lock of its own.
    std::lock_guard<std::mutex> lock(mu);
    if (!free.empty()) {
      std::unique_ptr<Instance> instance = std::move(free.back());
      free.pop_back();
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
    free.push_back(std::move(instance));
  }
};

void* Load(const char* path, int64_t num_features,
           DistrtTorchScriptModuleInfo* info, char** error) {
  auto module = std::make_unique<Module>();
  module->num_features = num_features;
  try {
    module->prototype = torch::jit::load(path);
  } catch (const std::exception& e) {
    *error = Error(
        "not a TorchScript file (torch.jit.script(model).save(path) writes "
        "one): " +
        Describe(e));
    return nullptr;
  } catch (...) {
    *error = Error("not a TorchScript file");
    return nullptr;
  }
  try {
    size_t position = 0;
    for (const auto& p : module->prototype.named_parameters(true)) {
      if (!p.value.requires_grad()) {  // frozen: not a variable
        ++position;
        continue;
      }
      module->trainable.push_back(position++);
      module->names.push_back(p.name);
      module->shapes.emplace_back(p.value.sizes().begin(),
                                  p.value.sizes().end());
      module->dtypes.push_back(
          std::string(c10::toString(p.value.scalar_type())));
      if (p.value.scalar_type() == torch::kFloat32) {
        torch::Tensor values = p.value.detach().contiguous();
        module->values.emplace_back(values.data_ptr<float>(),
                                    values.data_ptr<float>() + values.numel());
      } else {
        module->values.emplace_back();
      }
    }
    for (size_t i = 0; i < module->names.size(); ++i) {
      DistrtTorchScriptParameter p{};
      p.name = module->names[i].c_str();
      p.rank = static_cast<int>(module->shapes[i].size());
      p.shape = module->shapes[i].data();
      p.numel = static_cast<int64_t>(module->values[i].size());
      p.values = module->values[i].data();
      p.is_float32 = module->dtypes[i] == "Float";
      p.dtype = module->dtypes[i].c_str();
      module->parameters.push_back(p);
    }
    torch::NoGradGuard no_grad;
    module->prototype.eval();
    torch::Tensor out =
        module->prototype.forward({torch::zeros({1, num_features})}).toTensor();
    if (out.dim() != 2 || out.size(0) != 1) {
      *error = Error("forward(x) of x [1, " + std::to_string(num_features) +
                     "] returned shape " + ShapeString(out.sizes()) +
                     "; it must return [batch, outputs]");
      return nullptr;
    }
    module->outputs = static_cast<int>(out.size(1));
  } catch (const std::exception& e) {
    *error = Error("forward(x) of x float32 [1, " +
                   std::to_string(num_features) + "] failed: " + Describe(e));
    return nullptr;
  } catch (...) {
    *error = Error("forward(x) of x float32 [1, " +
                   std::to_string(num_features) + "] failed");
    return nullptr;
  }
  info->num_parameters = static_cast<int>(module->parameters.size());
  info->parameters = module->parameters.data();
  info->outputs = module->outputs;
  return module.release();
}

// The step with a module instance of its own; throws what LibTorch throws.
int Step(Module& module, Instance& instance, int loss_kind, const float* x,
         int64_t batch, const float* labels, const float* const* parameters,
         int with_gradients, double* loss_sum, float* predictions_out,
         float* const* gradients, char** error) {
  torch::Tensor input = torch::from_blob(
      const_cast<float*>(x), {batch, module.num_features}, torch::kFloat32);
  torch::Tensor targets =
      torch::from_blob(const_cast<float*>(labels), {batch}, torch::kFloat32);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < instance.parameters.size(); ++i) {
      torch::Tensor& p = instance.parameters[i];
      p.copy_(torch::from_blob(const_cast<float*>(parameters[i]), p.sizes(),
                               torch::kFloat32));
      p.mutable_grad() = torch::Tensor();
    }
  }
  // Training or evaluation: dropout and batch norm behave accordingly.
  instance.module.train(with_gradients != 0);
  std::optional<torch::NoGradGuard> no_grad;
  if (!with_gradients) no_grad.emplace();
  torch::Tensor out = instance.module.forward({input}).toTensor();
  if (out.dim() != 2 || out.size(0) != batch || out.size(1) != module.outputs) {
    *error = Error("forward returned shape " + ShapeString(out.sizes()) +
                   " for a batch of " + std::to_string(batch) + "; expected [" +
                   std::to_string(batch) + ", " +
                   std::to_string(module.outputs) + "]");
    return -1;
  }
  torch::Tensor loss, predictions;
  switch (loss_kind) {
    case kDistrtSoftmaxCrossEntropy:
      loss = torch::nn::functional::cross_entropy(
          out, targets.to(torch::kInt64),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(
              torch::kSum));
      predictions = torch::softmax(out, 1);
      break;
    case kDistrtSigmoidCrossEntropy:
      loss = torch::nn::functional::binary_cross_entropy_with_logits(
          out.squeeze(1), targets,
          torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions()
              .reduction(torch::kSum));
      predictions = torch::sigmoid(out.squeeze(1));
      break;
    default:
      loss = (out.squeeze(1) - targets).pow(2).sum();
      predictions = out.squeeze(1);
      break;
  }
  *loss_sum = loss.item<double>();
  predictions = predictions.detach().contiguous();
  std::memcpy(predictions_out, predictions.data_ptr<float>(),
              predictions.numel() * sizeof(float));
  if (!with_gradients) return 0;
  loss.backward();
  for (size_t i = 0; i < instance.parameters.size(); ++i) {
    const torch::Tensor& grad = instance.parameters[i].grad();
    const int64_t n = instance.parameters[i].numel();
    if (!grad.defined()) {  // a parameter forward does not use
      std::memset(gradients[i], 0, n * sizeof(float));
      continue;
    }
    torch::Tensor g = grad.contiguous();
    std::memcpy(gradients[i], g.data_ptr<float>(), n * sizeof(float));
  }
  return 0;
}

int StepApi(void* handle, int loss_kind, const float* x, int64_t batch,
            const float* labels, const float* const* parameters,
            int with_gradients, double* loss_sum, float* predictions,
            float* const* gradients, char** error) {
  Module& module = *static_cast<Module*>(handle);
  // No exception may leave this extern "C" function: it would abort.
  std::unique_ptr<Instance> instance;
  int result = -1;
  try {
    instance = module.Acquire();
    result = Step(module, *instance, loss_kind, x, batch, labels, parameters,
                  with_gradients, loss_sum, predictions, gradients, error);
  } catch (const std::exception& e) {
    *error = Error("a step failed: " + Describe(e));
    result = -1;
  } catch (...) {
    *error = Error("a step failed");
    result = -1;
  }
  if (instance != nullptr) module.Release(std::move(instance));
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
