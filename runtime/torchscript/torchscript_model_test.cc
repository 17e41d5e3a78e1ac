// TorchScriptModel against PyTorch itself: make_test_modules.py saved the
// modules and what PyTorch computes for them on a fixed batch (loss,
// predictions, gradients of every parameter), and the adapter must agree,
// also from several threads at once. Bad modules and batches are errors
// that say what is wrong.

#include "runtime/torchscript/torchscript_model.h"

#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/input/batch.h"
#include "runtime/models/mlp_model.h"
#include "runtime/models/model_variables.h"
#include "runtime/util/file_system.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

constexpr char kDir[] = "runtime/torchscript/testdata/";

nlohmann::json Expected() {
  return nlohmann::json::parse(
      *ReadFileToString(std::string(kDir) + "expected.json"));
}

absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& module,
                                            TorchScriptLoss loss,
                                            int64_t num_features = 4) {
  TorchScriptModelConfig config;
  config.path = std::string(kDir) + module + ".pt";
  config.loss = loss;
  config.num_features = num_features;
  return LoadTorchScriptModel(config);
}

Batch MakeBatch(const nlohmann::json& x, const std::vector<float>& labels) {
  Batch batch;
  batch.size = static_cast<int64_t>(x.size());
  batch.num_dense = 4;
  for (const auto& row : x) {
    for (float v : row.get<std::vector<float>>()) batch.dense.push_back(v);
  }
  batch.labels = labels;
  batch.offsets.assign(batch.size + 1, 0);
  return batch;
}

// The model's variables at the values the file holds.
std::vector<VariableSlice> InitialValues(const Model& model) {
  std::vector<VariableSlice> values;
  for (const ModelVariable& v : model.variables()) {
    values.push_back({v.initial_values, {}, {}});
  }
  return values;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5) << what << " element " << i;
  }
}

class AgreesWithPyTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(AgreesWithPyTorch, LossPredictionsAndGradients) {
  const nlohmann::json all = Expected();
  const nlohmann::json& want = all[GetParam()];
  const TorchScriptLoss loss = *ParseTorchScriptLoss(GetParam());
  absl::StatusOr<std::unique_ptr<Model>> model = Load(
      loss == TorchScriptLoss::kSoftmaxCrossEntropy ? "mlp3" : "mlp1", loss);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->name(), "torchscript");
  EXPECT_EQ((*model)->outputs_per_example(),
            loss == TorchScriptLoss::kSoftmaxCrossEntropy ? 3 : 1);

  // Variables named after the parameters, holding the saved values.
  std::vector<std::string> names;
  for (const ModelVariable& v : (*model)->variables()) {
    names.push_back(v.name());
    EXPECT_EQ(v.kind, ModelVariable::Kind::kDense);
    EXPECT_EQ(v.spec.dtype, DType::kFloat32);
    ExpectNear(v.initial_values,
               want["values"][v.name()].get<std::vector<float>>(), v.name());
  }
  EXPECT_THAT(names, ::testing::ElementsAre("fc1.weight", "fc1.bias",
                                            "fc2.weight", "fc2.bias"));
  EXPECT_EQ((*model)->variables()[0].spec.shape, (std::vector<int64_t>{8, 4}));

  const Batch batch =
      MakeBatch(all["x"], want["labels"].get<std::vector<float>>());
  const std::vector<VariableSlice> values = InitialValues(**model);
  ModelStepResult result;
  ASSERT_TRUE((*model)->Compute(batch, values, true, &result).ok());
  EXPECT_NEAR(result.loss_sum, want["loss_sum"].get<double>(), 1e-5);
  ExpectNear(result.predictions, want["predictions"].get<std::vector<float>>(),
             "predictions");
  ASSERT_EQ(result.gradients.size(), 4u);
  for (size_t i = 0; i < names.size(); ++i) {
    ExpectNear(result.gradients[i].dense,
               want["gradients"][names[i]].get<std::vector<float>>(),
               names[i] + " gradient");
  }

  // Without gradients: the same loss, no gradients.
  ModelStepResult evaluation;
  ASSERT_TRUE((*model)->Compute(batch, values, false, &evaluation).ok());
  EXPECT_NEAR(evaluation.loss_sum, result.loss_sum, 1e-6);
  EXPECT_TRUE(evaluation.gradients.empty());

  // Replicas compute at once, each with values of its own.
  std::vector<std::vector<VariableSlice>> scaled(4, values);
  std::vector<ModelStepResult> alone(4), together(4);
  for (int r = 0; r < 4; ++r) {
    for (VariableSlice& slice : scaled[r]) {
      for (float& v : slice.dense) v *= 1.0f + 0.1f * r;
    }
    ASSERT_TRUE((*model)->Compute(batch, scaled[r], true, &alone[r]).ok());
  }
  std::vector<std::thread> threads;
  std::vector<absl::Status> statuses(4);
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      for (int repeat = 0; repeat < 5 && statuses[r].ok(); ++repeat) {
        statuses[r] = (*model)->Compute(batch, scaled[r], true, &together[r]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r];
    // To float rounding, not bit for bit: LibTorch's intra-op threads,
    // competing with the other replicas', may split a reduction otherwise
    // (an ASan run of CI saw the last bit of one gradient differ).
    EXPECT_NEAR(together[r].loss_sum, alone[r].loss_sum,
                1e-6 * std::abs(alone[r].loss_sum))
        << "replica " << r;
    const std::vector<float>& got = together[r].gradients[0].dense;
    const std::vector<float>& want = alone[r].gradients[0].dense;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5f * std::abs(want[i]) + 1e-7f)
          << "replica " << r << " gradient " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Losses, AgreesWithPyTorch,
                         ::testing::Values("softmax_cross_entropy",
                                           "sigmoid_cross_entropy",
                                           "mean_squared_error"));

// [rows, cols] row-major as [cols, rows]: torch.nn.Linear's weight is
// [out, in], the built-in models' kernels [in, out].
std::vector<float> Transposed(const std::vector<float>& m, int64_t rows,
                              int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  }
  return t;
}

void ExpectRelativelyNear(const std::vector<float>& got,
                          const std::vector<float>& want,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::abs(want[i])))
        << what << " element " << i;
  }
}

// A TorchScript module of the built-in mlp's architecture, given the same
// weights, gives the same loss, predictions and gradients, and after steps
// of gradient descent on one device the same weights.
TEST(TorchScriptModelTest, EquivalentToTheBuiltInMlp) {
  absl::StatusOr<std::unique_ptr<Model>> torch =
      Load("relu_mlp", TorchScriptLoss::kSoftmaxCrossEntropy);
  ASSERT_TRUE(torch.ok()) << torch.status();
  const MlpModel builtin(/*num_features=*/4, /*num_classes=*/3,
                         /*hidden_units=*/{8}, ModelVariableOptions());
  // (fc1.weight, fc1.bias, fc2.weight, fc2.bias) against (dense_0/kernel,
  // dense_0/bias, logits/kernel, logits/bias); the weights' [out, in].
  const std::vector<std::pair<int64_t, int64_t>> weight_shapes = {{8, 4},
                                                                  {3, 8}};
  std::vector<VariableSlice> torch_values = InitialValues(**torch);
  const auto as_builtin = [&](const std::vector<VariableSlice>& values) {
    std::vector<VariableSlice> out = values;
    for (int layer = 0; layer < 2; ++layer) {
      const auto [rows, cols] = weight_shapes[layer];
      out[2 * layer].dense = Transposed(values[2 * layer].dense, rows, cols);
    }
    return out;
  };
  ASSERT_EQ(builtin.variables().size(), torch_values.size());
  const Batch batch = MakeBatch(Expected()["x"], {2, 0, 1});

  // Each trained on its own by plain gradient descent on the mean loss.
  constexpr float kLearningRate = 0.5f;
  const auto descend = [&](const std::vector<VariableSlice>& gradients,
                           std::vector<VariableSlice>* values) {
    for (size_t v = 0; v < values->size(); ++v) {
      for (size_t k = 0; k < (*values)[v].dense.size(); ++k) {
        (*values)[v].dense[k] -=
            kLearningRate * gradients[v].dense[k] / batch.size;
      }
    }
  };
  std::vector<VariableSlice> builtin_values = as_builtin(torch_values);
  for (int step = 0; step < 20; ++step) {
    ModelStepResult t, b;
    ASSERT_TRUE((*torch)->Compute(batch, torch_values, true, &t).ok());
    ASSERT_TRUE(builtin.Compute(batch, builtin_values, true, &b).ok());
    const std::string at = " at step " + std::to_string(step);
    EXPECT_NEAR(t.loss_sum, b.loss_sum, 1e-5 * std::max(1.0, b.loss_sum)) << at;
    ExpectRelativelyNear(t.predictions, b.predictions, "predictions" + at);
    const std::vector<VariableSlice> t_as_builtin = as_builtin(t.gradients);
    for (size_t v = 0; v < b.gradients.size(); ++v) {
      ExpectRelativelyNear(t_as_builtin[v].dense, b.gradients[v].dense,
                           builtin.variables()[v].name() + " gradient" + at);
    }
    descend(t.gradients, &torch_values);
    descend(b.gradients, &builtin_values);
    if (HasFailure()) return;
  }
  const std::vector<VariableSlice> trained = as_builtin(torch_values);
  for (size_t v = 0; v < trained.size(); ++v) {
    ExpectRelativelyNear(trained[v].dense, builtin_values[v].dense,
                         builtin.variables()[v].name() + " after 20 steps");
  }
  // The loss fell: the steps trained both.
  ModelStepResult first, last;
  ASSERT_TRUE(
      (*torch)->Compute(batch, InitialValues(**torch), false, &first).ok());
  ASSERT_TRUE((*torch)->Compute(batch, torch_values, false, &last).ok());
  EXPECT_LT(last.loss_sum, first.loss_sum);
}

TEST(TorchScriptModelTest, AParameterForwardDoesNotUseHasZeroGradient) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Load("unused", TorchScriptLoss::kMeanSquaredError);
  ASSERT_TRUE(model.ok()) << model.status();
  const Batch batch = MakeBatch(Expected()["x"], {1, 2, 3});
  ModelStepResult result;
  ASSERT_TRUE(
      (*model)->Compute(batch, InitialValues(**model), true, &result).ok());
  ASSERT_EQ(result.gradients.size(), 3u);
  // A module's own parameters come before its submodules'.
  EXPECT_EQ((*model)->variables()[0].name(), "unused");
  EXPECT_EQ(result.gradients[0].dense, (std::vector<float>{0, 0}));
  EXPECT_NE(result.gradients[1].dense, (std::vector<float>{0, 0, 0, 0}));
}

TEST(TorchScriptModelTest, AFrozenParameterIsNoVariableAndKeepsItsValue) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Load("frozen", TorchScriptLoss::kMeanSquaredError);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::string> names;
  for (const ModelVariable& v : (*model)->variables())
    names.push_back(v.name());
  EXPECT_THAT(names, ::testing::ElementsAre("fc.weight", "fc.bias"));
  const nlohmann::json all = Expected();
  const nlohmann::json& want = all["frozen"];
  const Batch batch =
      MakeBatch(all["x"], want["labels"].get<std::vector<float>>());
  ModelStepResult result;
  ASSERT_TRUE(
      (*model)->Compute(batch, InitialValues(**model), true, &result).ok());
  // PyTorch's loss with the frozen scale (2) applied.
  EXPECT_NEAR(result.loss_sum, want["loss_sum"].get<double>(), 1e-5);
  ExpectNear(result.gradients[1].dense,
             want["gradients"]["fc.bias"].get<std::vector<float>>(),
             "fc.bias gradient");
}

// A replica with no examples this step (the last, short one) gives zero
// gradients without running the module.
TEST(TorchScriptModelTest, AnEmptyBatchGivesZeroGradients) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Load("mlp3", TorchScriptLoss::kSoftmaxCrossEntropy);
  ASSERT_TRUE(model.ok()) << model.status();
  Batch empty;
  empty.offsets = {0};
  ModelStepResult result;
  ASSERT_TRUE(
      (*model)->Compute(empty, InitialValues(**model), true, &result).ok());
  EXPECT_EQ(result.loss_sum, 0);
  EXPECT_TRUE(result.predictions.empty());
  ASSERT_EQ(result.gradients.size(), 4u);
  EXPECT_EQ(result.gradients[0].dense, std::vector<float>(32, 0.0f));
}

TEST(TorchScriptModelTest, BadModulesSayWhatIsWrong) {
  const std::map<std::string, std::string> cases = {
      {"not_torchscript", "not a TorchScript file"},
      {"missing", "cannot read it: No such file or directory"},
      {"newer",
       "written by a newer PyTorch than this LibTorch (1.13) can read; save "
       "the module with that PyTorch version"},
      {"double", "parameter fc.weight is Double; parameters must be float32"},
      {"flat", "returned shape [1]; it must return [batch, outputs]"},
      {"no_parameters", "no parameters to train"},
      {"bad_embedding_dims", "embedding_dims() has a width of 0"},
      {"double_output", "returned Double; it must return float32"},
      {"two_arguments",
       "forward of x float32 [1, 4] failed: forward() is missing value for "
       "argument 'y'"},
      {"batch_norm",
       "forward changes the buffer(s) bn.running_mean, bn.running_var, "
       "bn.num_batches_tracked in training"},
  };
  for (const auto& [module, message] : cases) {
    absl::StatusOr<std::unique_ptr<Model>> model =
        Load(module, TorchScriptLoss::kMeanSquaredError);
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument)
        << module;
    EXPECT_THAT(model.status().message(), HasSubstr(message)) << module;
    EXPECT_THAT(model.status().message(),
                HasSubstr("--torchscript_file=runtime/torchscript/testdata/" +
                          module + ".pt"));
  }
  // Outputs that do not fit the loss, and x of the wrong width.
  EXPECT_THAT(
      Load("mlp3", TorchScriptLoss::kSigmoidCrossEntropy).status().message(),
      HasSubstr("sigmoid_cross_entropy needs 1 output per example; "
                "forward returns 3"));
  EXPECT_THAT(
      Load("mlp1", TorchScriptLoss::kSoftmaxCrossEntropy).status().message(),
      HasSubstr("softmax_cross_entropy needs at least 2 outputs"));
  absl::StatusOr<std::unique_ptr<Model>> wide =
      Load("mlp1", TorchScriptLoss::kMeanSquaredError, /*num_features=*/5);
  EXPECT_THAT(wide.status().message(),
              HasSubstr("forward of x float32 [1, 5] failed"));
  EXPECT_THAT(ParseTorchScriptLoss("hinge").status().message(),
              HasSubstr("expected softmax_cross_entropy"));
}

// Buffers forward only reads stay as saved in every replica's copy.
TEST(TorchScriptModelTest, AConstantBufferIsAllowed) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Load("constant_buffer", TorchScriptLoss::kSoftmaxCrossEntropy);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->variables().size(), 2u);  // fc's; not the buffer
  // PyTorch's loss with the buffer's saved offsets added.
  const nlohmann::json all = Expected();
  const nlohmann::json& want = all["constant_buffer"];
  ModelStepResult result;
  ASSERT_TRUE((*model)
                  ->Compute(MakeBatch(all["x"],
                                      want["labels"].get<std::vector<float>>()),
                            InitialValues(**model), true, &result)
                  .ok());
  EXPECT_NEAR(result.loss_sum, want["loss_sum"].get<double>(), 1e-5);
  ExpectNear(result.predictions, want["predictions"].get<std::vector<float>>(),
             "predictions");
}

// Embedding tables: the adapter's gather of a batch's rows and scatter of
// their gradients against PyTorch's embedding_bag (mode "sum", weighted).
TEST(TorchScriptModelTest, EmbeddingTablesAgreeWithPyTorch) {
  const nlohmann::json want = Expected()["wide_deep"];
  absl::StatusOr<std::unique_ptr<Model>> model =
      Load("wide_deep", TorchScriptLoss::kSigmoidCrossEntropy);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<ModelVariable>& variables = (*model)->variables();
  ASSERT_EQ(variables.size(), 4u);
  EXPECT_EQ(variables[2].name(), "embedding.0");
  EXPECT_EQ(variables[2].kind, ModelVariable::Kind::kHashEmbedding);
  EXPECT_EQ(variables[2].hash_spec.dim, 1);
  EXPECT_EQ(variables[3].name(), "embedding.1");
  EXPECT_EQ(variables[3].hash_spec.dim, 3);
  // Seeded, so that every task creates the same tables.
  EXPECT_NE(variables[2].hash_spec.initializer.seed,
            variables[3].hash_spec.initializer.seed);

  Batch batch;
  batch.size = static_cast<int64_t>(want["examples"].size());
  batch.offsets.push_back(0);
  for (const auto& example : want["examples"]) {
    for (const auto& feature : example) {
      batch.ids.push_back(feature[0].get<int64_t>());
      batch.values.push_back(feature[1].get<float>());
    }
    batch.offsets.push_back(static_cast<int64_t>(batch.ids.size()));
  }
  batch.labels = want["labels"].get<std::vector<float>>();

  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE((*model)->SparseIds(batch, &ids).ok());
  const std::vector<int64_t> batch_ids =
      want["ids"].get<std::vector<int64_t>>();
  EXPECT_TRUE(ids[0].empty());
  EXPECT_EQ(ids[2], batch_ids);
  EXPECT_EQ(ids[3], batch_ids);

  std::vector<VariableSlice> values = InitialValues(**model);
  for (int t = 0; t < 2; ++t) {
    values[2 + t].ids = batch_ids;
    values[2 + t].rows = want["tables"][t].get<std::vector<float>>();
  }
  ModelStepResult result;
  ASSERT_TRUE((*model)->Compute(batch, values, true, &result).ok());
  EXPECT_NEAR(result.loss_sum, want["loss_sum"].get<double>(), 1e-5);
  ExpectNear(result.predictions, want["predictions"].get<std::vector<float>>(),
             "predictions");
  ExpectNear(result.gradients[0].dense,
             want["gradients"]["fc.weight"].get<std::vector<float>>(),
             "fc.weight gradient");
  ExpectNear(result.gradients[1].dense,
             want["gradients"]["fc.bias"].get<std::vector<float>>(),
             "fc.bias gradient");
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(result.gradients[2 + t].ids, batch_ids);
    ExpectNear(result.gradients[2 + t].rows,
               want["table_gradients"][t].get<std::vector<float>>(),
               "table " + std::to_string(t) + " gradient");
  }

  // A row the batch needs but the values lack, and a negative id.
  values[3].ids.pop_back();
  values[3].rows.resize(values[3].rows.size() - 3);
  EXPECT_THAT((*model)->Compute(batch, values, true, &result).message(),
              HasSubstr("no embedding row for id 42"));
  batch.ids[0] = -1;
  EXPECT_THAT((*model)->SparseIds(batch, &ids).message(),
              HasSubstr("feature id -1 is negative"));
}

TEST(TorchScriptModelTest, BadBatchesAreErrors) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Load("mlp3", TorchScriptLoss::kSoftmaxCrossEntropy);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<VariableSlice> values = InitialValues(**model);
  ModelStepResult result;
  absl::Status s = (*model)->Compute(MakeBatch(Expected()["x"], {0, 3, 1}),
                                     values, true, &result);
  EXPECT_THAT(s.message(), HasSubstr("class ids in [0, 3)"));
  s = (*model)->Compute(MakeBatch(Expected()["x"], {0, 0.5f, 1}), values, true,
                        &result);
  EXPECT_THAT(s.message(), HasSubstr("class ids in [0, 3)"));
  std::vector<VariableSlice> short_values = values;
  short_values[1].dense.pop_back();
  s = (*model)->Compute(MakeBatch(Expected()["x"], {0, 1, 2}), short_values,
                        true, &result);
  EXPECT_THAT(s.message(),
              HasSubstr("\"fc1.bias\": got 7 values, its shape has 8"));
}

}  // namespace
}  // namespace distrt
