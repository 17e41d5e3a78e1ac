// TorchScriptModel against PyTorch itself: make_test_modules.py saved the
// modules and what PyTorch computes for them on a fixed batch (loss,
// predictions, gradients of every parameter), and the adapter must agree,
// also from several threads at once. Bad modules and batches are errors
// that say what is wrong.

#include "runtime/torchscript/torchscript_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/input/batch.h"
#include "runtime/input/feature_spec.h"
#include "runtime/models/mlp_model.h"
#include "runtime/models/model_inputs.h"
#include "runtime/models/model_variables.h"
#include "runtime/ps/table_policy.h"
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

// Feature groups: forward(dense, embeddings) with one table per group.

// The groups of testdata/groups.pt: "user" (dim 2, ids bounded by 100,
// weighted) and "item" (dim 3, hashed), both pooled with `combiner`.
TorchScriptModelConfig GroupsConfig(const std::string& module,
                                    Combiner combiner) {
  TorchScriptModelConfig config;
  config.path = std::string(kDir) + module + ".pt";
  config.loss = TorchScriptLoss::kMeanSquaredError;
  config.num_dense = 3;
  TorchScriptGroup user;
  user.group.name = "user";
  user.group.dim = 2;
  user.group.combiner = combiner;
  user.buckets = 100;
  TorchScriptGroup item;
  item.group.name = "item";
  item.group.dim = 3;
  item.group.combiner = combiner;
  config.groups = {user, item};
  return config;
}

Batch::Group MakeGroup(const std::vector<std::vector<int64_t>>& bags,
                       const std::vector<std::vector<float>>& weights) {
  Batch::Group group;
  group.offsets.push_back(0);
  for (size_t b = 0; b < bags.size(); ++b) {
    group.ids.insert(group.ids.end(), bags[b].begin(), bags[b].end());
    if (!weights.empty()) {
      group.weights.insert(group.weights.end(), weights[b].begin(),
                           weights[b].end());
    }
    group.offsets.push_back(static_cast<int64_t>(group.ids.size()));
  }
  return group;
}

// Four examples: repeated ids, an empty bag in each group, weights that TF
// prunes (<= 0) leaving an example with none, a negative hashed id.
Batch GroupsBatch() {
  Batch batch;
  batch.size = 4;
  batch.num_dense = 3;
  batch.dense = {0.5, -1, 2, 1.5, 0.25, -0.5, 0, 0, 1, -2, 1, 0.5};
  batch.labels = {0.3f, -1.2f, 2.5f, 0.7f};
  batch.offsets.assign(batch.size + 1, 0);
  batch.groups.push_back(MakeGroup({{5, 7, 5}, {7}, {}, {9, 5}},
                                   {{1.0f, 2.0f, 0.5f}, {3.0f}, {}, {0, -1}}));
  batch.groups.push_back(
      MakeGroup({{-9000000000, 3}, {}, {3, 3, 11}, {11}}, {}));
  // The user group's own index of its distinct ids, as MakeBatch makes it;
  // the item group's is left for the model to sort.
  batch.groups[0].distinct_ids = {5, 7, 9};
  batch.groups[0].distinct_index = {0, 1, 0, 1, 2, 0};
  return batch;
}

// What the linear module of testdata/groups.pt gives, computed here from
// the combiner's definition: predictions, the loss, and every gradient.
struct LinearReference {
  std::vector<float> predictions;
  double loss_sum = 0;
  std::vector<VariableSlice> gradients;
};

LinearReference ComputeReference(const Batch& batch, Combiner combiner,
                                 const std::vector<VariableSlice>& values) {
  // values: dense.weight [1, 3], dense.bias [1], group0.weight [1, 2],
  // group1.weight [1, 3], then the tables "user" and "item".
  LinearReference ref;
  ref.gradients.resize(values.size());
  for (size_t v = 0; v < values.size(); ++v) {
    ref.gradients[v] = ZeroGradient(values[v]);
  }
  const int64_t dims[2] = {2, 3};
  for (int64_t b = 0; b < batch.size; ++b) {
    double out = values[1].dense[0];
    for (int d = 0; d < 3; ++d) {
      out += values[0].dense[d] * batch.dense[b * 3 + d];
    }
    // Per group: the kept (row, weight) pairs and the combiner's divisor.
    std::vector<std::vector<std::pair<int64_t, double>>> kept(2);
    std::vector<double> divisor(2, 0.0);
    std::vector<std::vector<double>> pooled(2);
    for (int g = 0; g < 2; ++g) {
      const Batch::Group& group = batch.groups[g];
      const VariableSlice& table = values[4 + g];
      double sum = 0, squares = 0;
      for (int64_t k = group.offsets[b]; k < group.offsets[b + 1]; ++k) {
        const double w = group.weights.empty() ? 1.0 : group.weights[k];
        if (w <= 0) continue;
        const int64_t row =
            std::find(table.ids.begin(), table.ids.end(), group.ids[k]) -
            table.ids.begin();
        kept[g].push_back({row, w});
        sum += w;
        squares += w * w;
      }
      divisor[g] = combiner == Combiner::kSum    ? 1.0
                   : combiner == Combiner::kMean ? sum
                                                 : std::sqrt(squares);
      pooled[g].assign(dims[g], 0.0);
      for (const auto& [row, w] : kept[g]) {
        for (int d = 0; d < dims[g]; ++d) {
          pooled[g][d] += w * table.rows[row * dims[g] + d] / divisor[g];
        }
      }
      for (int d = 0; d < dims[g]; ++d) {
        out += values[2 + g].dense[d] * pooled[g][d];
      }
    }
    ref.predictions.push_back(static_cast<float>(out));
    const double r = out - batch.labels[b];
    ref.loss_sum += r * r;
    const double dout = 2 * r;
    for (int d = 0; d < 3; ++d) {
      ref.gradients[0].dense[d] += dout * batch.dense[b * 3 + d];
    }
    ref.gradients[1].dense[0] += dout;
    for (int g = 0; g < 2; ++g) {
      for (int d = 0; d < dims[g]; ++d) {
        ref.gradients[2 + g].dense[d] += dout * pooled[g][d];
      }
      for (const auto& [row, w] : kept[g]) {
        for (int d = 0; d < dims[g]; ++d) {
          ref.gradients[4 + g].rows[row * dims[g] + d] +=
              dout * w / divisor[g] * values[2 + g].dense[d];
        }
      }
    }
  }
  return ref;
}

// A group's admission and eviction reach its table's spec, which
// CreateHashTable sends to the ps tasks.
TEST(TorchScriptModelTest, GroupPoliciesReachTheTables) {
  TorchScriptModelConfig config = GroupsConfig("groups", Combiner::kSum);
  TablePolicy& policy = config.groups[1].group.policy;
  policy.admission.kind = AdmissionKind::kProbability;
  policy.admission.probability = 0.5;
  policy.eviction.max_rows = 300;
  policy.eviction.ttl_steps = 7;
  absl::StatusOr<std::unique_ptr<Model>> model = LoadTorchScriptModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<ModelVariable>& variables = (*model)->variables();
  ASSERT_EQ(variables.size(), 6u);
  ASSERT_EQ(variables[4].name(), "user");
  EXPECT_TRUE(variables[4].hash_spec.policy.admits_all());
  EXPECT_FALSE(variables[4].hash_spec.policy.evicts());
  ASSERT_EQ(variables[5].name(), "item");
  EXPECT_EQ(DescribePolicyDifference(variables[5].hash_spec.policy, policy),
            "");
  EXPECT_EQ(variables[5].hash_spec.policy.admission.probability, 0.5);
}

class FeatureGroups : public ::testing::TestWithParam<Combiner> {};

TEST_P(FeatureGroups, PoolAndGradientsAsTheCombinerDefines) {
  const Combiner combiner = GetParam();
  absl::StatusOr<std::unique_ptr<Model>> model =
      LoadTorchScriptModel(GroupsConfig("groups", combiner));
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<ModelVariable>& variables = (*model)->variables();
  ASSERT_EQ(variables.size(), 6u);
  EXPECT_EQ(variables[3].name(), "group1.weight");
  EXPECT_EQ(variables[4].name(), "user");
  EXPECT_EQ(variables[4].kind, ModelVariable::Kind::kHashEmbedding);
  EXPECT_EQ(variables[4].hash_spec.dim, 2);
  EXPECT_EQ(variables[5].name(), "item");
  EXPECT_EQ(variables[5].hash_spec.dim, 3);

  const Batch batch = GroupsBatch();
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE((*model)->SparseIds(batch, &ids).ok());
  EXPECT_TRUE(ids[0].empty());
  EXPECT_EQ(ids[4], (std::vector<int64_t>{5, 7, 9}));
  EXPECT_EQ(ids[5], (std::vector<int64_t>{-9000000000, 3, 11}));

  std::vector<VariableSlice> values = InitialValues(**model);
  for (int g = 0; g < 2; ++g) {
    VariableSlice& table = values[4 + g];
    table.ids = ids[4 + g];
    for (size_t i = 0; i < table.ids.size() * (g == 0 ? 2 : 3); ++i) {
      table.rows.push_back(0.1f * (i + 1) * (i % 2 ? -1 : 1) + 0.05f * g);
    }
  }
  ModelStepResult result;
  ASSERT_TRUE((*model)->Compute(batch, values, true, &result).ok());
  const LinearReference ref = ComputeReference(batch, combiner, values);
  EXPECT_NEAR(result.loss_sum, ref.loss_sum, 1e-5 * ref.loss_sum);
  ExpectRelativelyNear(result.predictions, ref.predictions, "predictions");
  // The example without ids left in "user" (weights 0 and -1) and the one
  // with an empty bag pool zeros: their predictions have no user term.
  ASSERT_EQ(result.gradients.size(), 6u);
  for (int v = 0; v < 4; ++v) {
    ExpectRelativelyNear(result.gradients[v].dense, ref.gradients[v].dense,
                         variables[v].name() + " gradient");
  }
  for (int v = 4; v < 6; ++v) {
    EXPECT_EQ(result.gradients[v].ids, values[v].ids);
    ExpectRelativelyNear(result.gradients[v].rows, ref.gradients[v].rows,
                         variables[v].name() + " gradient");
  }
  // Id 9 (weight 0) is pruned: no gradient.
  EXPECT_EQ(result.gradients[4].rows[4], 0.0f);
  EXPECT_EQ(result.gradients[4].rows[5], 0.0f);

  // And as central differences of the loss (quadratic in each row value,
  // so exact but for float rounding).
  for (int v = 4; v < 6; ++v) {
    for (size_t i = 0; i < values[v].rows.size(); ++i) {
      constexpr float kStep = 1e-2f;
      std::vector<VariableSlice> moved = values;
      ModelStepResult up, down;
      moved[v].rows[i] += kStep;
      ASSERT_TRUE((*model)->Compute(batch, moved, false, &up).ok());
      moved[v].rows[i] -= 2 * kStep;
      ASSERT_TRUE((*model)->Compute(batch, moved, false, &down).ok());
      const double numeric = (up.loss_sum - down.loss_sum) / (2 * kStep);
      EXPECT_NEAR(result.gradients[v].rows[i], numeric,
                  2e-3 * std::max(1.0, std::abs(numeric)))
          << variables[v].name() << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Combiners, FeatureGroups,
                         ::testing::Values(Combiner::kSum, Combiner::kMean,
                                           Combiner::kSqrtn),
                         [](const ::testing::TestParamInfo<Combiner>& info) {
                           return std::string(CombinerName(info.param));
                         });

// A replica without examples: zeros, with no groups in the batch at all.
TEST(TorchScriptModelTest, AnEmptyBatchWithGroupsGivesZeroGradients) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      LoadTorchScriptModel(GroupsConfig("groups", Combiner::kMean));
  ASSERT_TRUE(model.ok()) << model.status();
  Batch empty;
  empty.offsets = {0};
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE((*model)->SparseIds(empty, &ids).ok());
  EXPECT_TRUE(ids[4].empty());
  ModelStepResult result;
  ASSERT_TRUE(
      (*model)->Compute(empty, InitialValues(**model), true, &result).ok());
  EXPECT_EQ(result.loss_sum, 0);
  ASSERT_EQ(result.gradients.size(), 6u);
  EXPECT_EQ(result.gradients[0].dense, std::vector<float>(3, 0.0f));
  EXPECT_TRUE(result.gradients[5].rows.empty());
}

TEST(TorchScriptModelTest, ModulesThatDoNotFitTheGroupsSayHow) {
  const std::string dir =
      std::string("--torchscript_file=runtime/torchscript/testdata/");
  // Dims that differ, and a count that differs: both lists named.
  absl::StatusOr<std::unique_ptr<Model>> model =
      LoadTorchScriptModel(GroupsConfig("groups_other_dims", Combiner::kSum));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(),
              HasSubstr(dir + "groups_other_dims.pt: the feature spec's "
                              "embedding groups have dims [2, 3] but the "
                              "module's embedding_dims() returns [2, 4]"));
  TorchScriptModelConfig three = GroupsConfig("groups", Combiner::kSum);
  three.groups.push_back(three.groups[1]);
  three.groups.back().group.name = "shop";
  three.groups.back().group.dim = 4;
  model = LoadTorchScriptModel(three);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(),
              HasSubstr(dir + "groups.pt: the feature spec's embedding groups "
                              "have dims [2, 3, 4] but the module's "
                              "embedding_dims() returns [2, 3]"));
  model = LoadTorchScriptModel(GroupsConfig("groups_no_dims", Combiner::kSum));
  EXPECT_THAT(model.status().message(),
              HasSubstr("embedding_dims() is missing"));

  // forward's signature: one argument with groups, two without.
  TorchScriptModelConfig one_argument =
      GroupsConfig("wide_deep", Combiner::kSum);
  one_argument.groups[0].group.dim = 1;
  model = LoadTorchScriptModel(one_argument);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(),
              HasSubstr(dir + "wide_deep.pt: forward(embeddings: "
                              "List[Tensor]) does not take the feature "
                              "spec's embedding groups: it must be "
                              "forward(dense: Tensor, embeddings: "
                              "List[Tensor])"));
  model = Load("groups", TorchScriptLoss::kMeanSquaredError);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(),
              HasSubstr(dir + "groups.pt: forward(dense: Tensor, embeddings: "
                              "List[Tensor]) takes a feature spec's "
                              "embedding groups"));

  // A group named like a parameter.
  TorchScriptModelConfig clash = GroupsConfig("groups", Combiner::kSum);
  clash.groups[0].group.name = "dense.bias";
  model = LoadTorchScriptModel(clash);
  EXPECT_THAT(model.status().message(),
              HasSubstr("embedding group \"dense.bias\" is named like the "
                        "module's parameter"));
}

TEST(TorchScriptModelTest, BatchesThatDoNotFitTheGroupsAreErrors) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      LoadTorchScriptModel(GroupsConfig("groups", Combiner::kSum));
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::vector<int64_t>> ids;
  Batch batch = GroupsBatch();
  batch.groups[0].ids[1] = 100;  // the user group's ids are in [0, 100)
  EXPECT_THAT((*model)->SparseIds(batch, &ids).message(),
              HasSubstr("embedding group \"user\": example 0 has id 100, "
                        "outside the group's [0, 100)"));
  batch = GroupsBatch();
  batch.groups.pop_back();
  EXPECT_THAT((*model)->SparseIds(batch, &ids).message(),
              HasSubstr("examples have 1 embedding groups, the feature "
                        "spec 2"));
  batch = GroupsBatch();
  batch.groups[1].offsets.pop_back();
  EXPECT_THAT((*model)->SparseIds(batch, &ids).message(),
              HasSubstr("embedding group \"item\": 4 offsets for a batch "
                        "of 4 examples"));

  // Values without a row the batch needs, and dense of another width.
  batch = GroupsBatch();
  ASSERT_TRUE((*model)->SparseIds(batch, &ids).ok());
  std::vector<VariableSlice> values = InitialValues(**model);
  for (int v = 4; v < 6; ++v) {
    values[v].ids = ids[v];
    values[v].rows.assign(ids[v].size() * (v == 4 ? 2 : 3), 0.5f);
  }
  ModelStepResult result;
  ASSERT_TRUE((*model)->Compute(batch, values, true, &result).ok());
  values[5].ids.pop_back();
  values[5].rows.resize(values[5].rows.size() - 3);
  EXPECT_THAT((*model)->Compute(batch, values, true, &result).message(),
              HasSubstr("embedding table \"item\" has no row for id 11"));
  batch.num_dense = 2;
  EXPECT_THAT((*model)->Compute(batch, values, true, &result).message(),
              HasSubstr("examples have 2 dense features, the model takes 3 "
                        "(the feature spec's numeric features)"));
}

// examples/torch/dlrm.py at a small size, with the spec it writes: the
// worker's path from a FeatureSpec to the model, and steps of gradient
// descent on the tables' rows and the MLPs lower the loss.
TEST(TorchScriptModelTest, TheDlrmExampleTrainsWithItsFeatureSpec) {
  absl::StatusOr<FeatureSpec> spec =
      ReadFeatureSpec("examples/torch/dlrm_small_spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  TorchScriptModelConfig config;
  config.path = "examples/torch/dlrm_small.pt";
  config.loss = TorchScriptLoss::kSigmoidCrossEntropy;
  config.groups = TorchScriptGroupsOf(*spec);
  config.num_dense = spec->num_dense();
  ASSERT_EQ(config.groups.size(), 3u);
  EXPECT_EQ(config.groups[0].group.name, "C1");
  EXPECT_EQ(config.groups[0].buckets, 0);  // hashed
  EXPECT_EQ(config.num_dense, 4);
  absl::StatusOr<std::unique_ptr<Model>> model = LoadTorchScriptModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<ModelVariable>& variables = (*model)->variables();
  ASSERT_GE(variables.size(), 3u);
  const size_t tables = variables.size() - 3;
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(variables[tables + t].name(), "C" + std::to_string(t + 1));
    EXPECT_EQ(variables[tables + t].hash_spec.dim, 4);
  }

  // Eight examples; a label that depends on table C1's ids and a numeric
  // feature, so that both parts have something to learn.
  Batch batch;
  batch.size = 8;
  batch.num_dense = 4;
  batch.offsets.assign(batch.size + 1, 0);
  for (int t = 0; t < 3; ++t) {
    std::vector<std::vector<int64_t>> bags;
    for (int64_t b = 0; b < batch.size; ++b) {
      bags.push_back({(b * (t + 3)) % 5 + 1000 * t});
    }
    batch.groups.push_back(MakeGroup(bags, {}));
  }
  for (int64_t b = 0; b < batch.size; ++b) {
    for (int d = 0; d < 4; ++d) {
      batch.dense.push_back(0.25f * ((b + d) % 4) - 0.3f);
    }
    batch.labels.push_back((b % 3 == 0 || b == 5) ? 1.0f : 0.0f);
  }
  std::vector<std::vector<int64_t>> ids;
  ASSERT_TRUE((*model)->SparseIds(batch, &ids).ok());
  std::vector<VariableSlice> values = InitialValues(**model);
  for (size_t v = tables; v < variables.size(); ++v) {
    values[v].ids = ids[v];
    for (size_t i = 0; i < ids[v].size() * 4; ++i) {
      values[v].rows.push_back(0.05f * static_cast<float>((i * 7) % 11) -
                               0.25f);
    }
  }
  ModelStepResult first;
  ASSERT_TRUE((*model)->Compute(batch, values, true, &first).ok());
  // The rows' gradients through the dot interactions, against central
  // differences of the loss.
  for (size_t v = tables; v < variables.size(); ++v) {
    for (size_t i = 0; i < values[v].rows.size(); ++i) {
      constexpr float kStep = 1e-2f;
      std::vector<VariableSlice> moved = values;
      ModelStepResult up, down;
      moved[v].rows[i] += kStep;
      ASSERT_TRUE((*model)->Compute(batch, moved, false, &up).ok());
      moved[v].rows[i] -= 2 * kStep;
      ASSERT_TRUE((*model)->Compute(batch, moved, false, &down).ok());
      EXPECT_NEAR(first.gradients[v].rows[i],
                  (up.loss_sum - down.loss_sum) / (2 * kStep), 2e-3)
          << variables[v].name() << " element " << i;
    }
  }
  for (int step = 0; step < 40; ++step) {
    ModelStepResult result;
    ASSERT_TRUE((*model)->Compute(batch, values, true, &result).ok());
    for (size_t v = 0; v < values.size(); ++v) {
      std::vector<float>& x = v < tables ? values[v].dense : values[v].rows;
      const std::vector<float>& g =
          v < tables ? result.gradients[v].dense : result.gradients[v].rows;
      ASSERT_EQ(x.size(), g.size()) << variables[v].name();
      for (size_t i = 0; i < x.size(); ++i) x[i] -= 1.0f * g[i] / batch.size;
    }
  }
  ModelStepResult last;
  ASSERT_TRUE((*model)->Compute(batch, values, false, &last).ok());
  EXPECT_LT(last.loss_sum, 0.7 * first.loss_sum);
}

}  // namespace
}  // namespace distrt
