//===- tests/unit/frontend/FrontendFlexConvTest.cpp - CausalConvWithState, FlexAttention -===//
//
// The expansions of frontend/ops/CausalConvOps.cpp and FlexAttentionOps.cpp
// beyond the ONNX node cases: a compiled CausalConvWithState run as a decode
// loop (the state fed back) against one run over every position, and what
// fuse-attention makes of a FlexAttention whose Q the import cannot type
// (symbolic shapes, grouped heads): one Attention without a modifier and with
// a causal score_mod, the unfused graph (a soft cap) compiled as evaluated.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "frontend/OnnxImporter.h"
#include "ir/Graph.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"

#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>
#include <variant>

using namespace onnxc;
using namespace onnxc::lowertest;
namespace fs = std::filesystem;

namespace {

using Dims = std::vector<std::variant<int64_t, std::string>>;

void setType(onnx::ValueInfoProto *info, const std::string &name, const Dims &dims) {
  info->set_name(name);
  auto *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (const auto &dim : dims) {
    auto *d = tensor->mutable_shape()->add_dim();
    if (std::holds_alternative<int64_t>(dim))
      d->set_dim_value(std::get<int64_t>(dim));
    else
      d->set_dim_param(std::get<std::string>(dim));
  }
}

onnx::NodeProto *addNode(onnx::GraphProto &graph, const std::string &op,
                         std::vector<std::string> inputs, std::vector<std::string> outputs) {
  onnx::NodeProto *node = graph.add_node();
  node->set_op_type(op);
  node->set_name(op + "_" + std::to_string(graph.node_size()));
  for (const auto &in : inputs)
    node->add_input(in);
  for (const auto &out : outputs)
    node->add_output(out);
  return node;
}

void addInitializer(onnx::GraphProto &graph, const std::string &name, std::vector<int64_t> dims,
                    const std::vector<float> &values) {
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    tensor->add_dims(d);
  for (float v : values)
    tensor->add_float_data(v);
}

void addI64(onnx::GraphProto &graph, const std::string &name, std::vector<int64_t> dims,
            const std::vector<int64_t> &values) {
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims)
    tensor->add_dims(d);
  for (int64_t v : values)
    tensor->add_int64_data(v);
}

class FlexConvImport : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("onnxc-flexconv-" + std::to_string(getpid()) + "-" + info->name() + ".onnx");
    model_.set_ir_version(10);
    for (auto [domain, version] : {std::pair<const char *, int64_t>{"", 27},
                                   std::pair<const char *, int64_t>{"ai.onnx.preview", 1}}) {
      auto *opset = model_.add_opset_import();
      opset->set_domain(domain);
      opset->set_version(version);
    }
    graph().set_name("g");
  }
  void TearDown() override { fs::remove(path_); }

  onnx::GraphProto &graph() { return *model_.mutable_graph(); }

  /// The model imported and run through `level`'s pipeline.
  std::unique_ptr<Graph> import(int level) {
    {
      std::ofstream out(path_, std::ios::binary);
      model_.SerializeToOstream(&out);
    }
    std::unique_ptr<Graph> g = importOnnxFile(path_.string());
    PassManager pm;
    addOptimizationPipeline(pm, level);
    pm.run(*g);
    return g;
  }

  onnx::ModelProto model_;
  fs::path path_;
};

size_t countKind(const Graph &graph, OpKind kind) {
  size_t n = 0;
  for (const Node *node : graph.nodeList())
    n += node->kind() == kind;
  return n;
}

/// x[:, :, begin:end] of a [B, C, L] tensor.
Tensor positions(const Tensor &x, int64_t begin, int64_t end) {
  int64_t rows = x.dims()[0] * x.dims()[1], length = x.dims()[2];
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = begin; i < end; ++i)
      out.push_back(x.data<float>()[r * length + i]);
  return Tensor::fromVector<float>({x.dims()[0], x.dims()[1], end - begin}, out);
}

void expectNear(const Tensor &actual, const Tensor &expected, int64_t offset, const char *what) {
  ASSERT_EQ(actual.dims()[0] * actual.dims()[1], expected.dims()[0] * expected.dims()[1]);
  int64_t rows = actual.dims()[0] * actual.dims()[1], length = actual.dims()[2];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < length; ++i)
      ASSERT_NEAR(actual.data<float>()[r * length + i],
                  expected.data<float>()[r * expected.dims()[2] + offset + i], 1e-5)
          << what << " row " << r << " position " << offset + i;
}

TEST_F(FlexConvImport, CausalConvDecodeLoopMatchesOneRun) {
  constexpr int64_t kBatch = 2, kChannels = 6, kKernel = 4, kTotal = 12, kPrefill = 7;
  setType(graph().add_input(), "x", {kBatch, kChannels, std::string("L")});
  setType(graph().add_input(), "past", {kBatch, kChannels, kKernel - 1});
  Tensor weight = randomOf(DType::F32, {kChannels, 1, kKernel}, 11);
  Tensor bias = randomOf(DType::F32, {kChannels}, 12);
  addInitializer(
      graph(), "w", {kChannels, 1, kKernel},
      std::vector<float>(weight.data<float>(), weight.data<float>() + kChannels * kKernel));
  addInitializer(graph(), "b", {kChannels},
                 std::vector<float>(bias.data<float>(), bias.data<float>() + kChannels));
  onnx::NodeProto *conv =
      addNode(graph(), "CausalConvWithState", {"x", "w", "b", "past"}, {"y", "present"});
  auto *activation = conv->add_attribute();
  activation->set_name("activation");
  activation->set_type(onnx::AttributeProto::STRING);
  activation->set_s("silu");
  setType(graph().add_output(), "y", {kBatch, kChannels, std::string("L")});
  setType(graph().add_output(), "present", {kBatch, kChannels, kKernel - 1});
  std::unique_ptr<Graph> g = import(3);

  Tensor x = randomOf(DType::F32, {kBatch, kChannels, kTotal}, 13);
  Tensor zeros = Tensor::fromVector<float>({kBatch, kChannels, kKernel - 1},
                                           std::vector<float>(kBatch * kChannels * (kKernel - 1)));
  std::vector<Tensor> whole = runCompiled(*g, {{"x", x}, {"past", zeros}});
  std::vector<Tensor> reference = runReference(*g, {{"x", x}, {"past", zeros}});
  expectNear(whole[0], reference[0], 0, "one run against the evaluator");

  std::vector<Tensor> step = runCompiled(*g, {{"x", positions(x, 0, kPrefill)}, {"past", zeros}});
  expectNear(step[0], whole[0], 0, "prefill");
  for (int64_t t = kPrefill; t < kTotal; ++t) {
    step = runCompiled(*g, {{"x", positions(x, t, t + 1)}, {"past", step[1]}});
    expectNear(step[0], whole[0], t, "decode step");
  }
  expectNear(step[1], whole[1], 0, "final state");
}

/// A FlexAttention over q = Identity(Q) [b, 8, s, 16] (untyped at import) and
/// K, V [b, 2, s, 16], with `scoreMod` if given.
void addFlexAttention(onnx::GraphProto &graph, const onnx::GraphProto *scoreMod) {
  setType(graph.add_input(), "Q", {std::string("b"), int64_t(8), std::string("s"), int64_t(16)});
  setType(graph.add_input(), "K", {std::string("b"), int64_t(2), std::string("s"), int64_t(16)});
  setType(graph.add_input(), "V", {std::string("b"), int64_t(2), std::string("s"), int64_t(16)});
  addNode(graph, "Identity", {"Q"}, {"q"});
  onnx::NodeProto *flex = addNode(graph, "FlexAttention", {"q", "K", "V"}, {"Y"});
  flex->set_domain("ai.onnx.preview");
  if (scoreMod) {
    auto *attr = flex->add_attribute();
    attr->set_name("score_mod");
    attr->set_type(onnx::AttributeProto::GRAPH);
    *attr->mutable_g() = *scoreMod;
  }
  setType(graph.add_output(), "Y", {std::string("b"), int64_t(8), std::string("s"), int64_t(16)});
}

/// scores where key j <= query i, else -inf (test_flexattention_causal_mask's).
onnx::GraphProto causalMod() {
  onnx::GraphProto mod;
  mod.set_name("causal");
  setType(mod.add_input(), "scores",
          {std::string("B"), std::string("H"), std::string("L"), std::string("S")});
  addI64(mod, "zero", {}, {0});
  addI64(mod, "one", {}, {1});
  addI64(mod, "two", {}, {2});
  addI64(mod, "three", {}, {3});
  addI64(mod, "rows", {4}, {1, 1, -1, 1});
  addI64(mod, "cols", {4}, {1, 1, 1, -1});
  addInitializer(mod, "hidden", {}, {-std::numeric_limits<float>::infinity()});
  addNode(mod, "Shape", {"scores"}, {"shape"});
  addNode(mod, "Gather", {"shape", "two"}, {"l"});
  addNode(mod, "Gather", {"shape", "three"}, {"s"});
  addNode(mod, "Range", {"zero", "l", "one"}, {"i_range"});
  addNode(mod, "Reshape", {"i_range", "rows"}, {"i"});
  addNode(mod, "Range", {"zero", "s", "one"}, {"j_range"});
  addNode(mod, "Reshape", {"j_range", "cols"}, {"j"});
  addNode(mod, "GreaterOrEqual", {"i", "j"}, {"visible"});
  addNode(mod, "Where", {"visible", "scores", "hidden"}, {"out"});
  setType(mod.add_output(), "out", {});
  return mod;
}

/// cap * tanh(scores / cap).
onnx::GraphProto softCapMod() {
  onnx::GraphProto mod;
  mod.set_name("soft_cap");
  setType(mod.add_input(), "scores", {});
  addInitializer(mod, "cap", {}, {2.0f});
  addNode(mod, "Div", {"scores", "cap"}, {"scaled"});
  addNode(mod, "Tanh", {"scaled"}, {"capped"});
  addNode(mod, "Mul", {"capped", "cap"}, {"out"});
  setType(mod.add_output(), "out", {});
  return mod;
}

TEST_F(FlexConvImport, FlexAttentionWithoutModsFusesGrouped) {
  addFlexAttention(graph(), nullptr);
  std::unique_ptr<Graph> g = import(2);
  EXPECT_EQ(countKind(*g, OpKind::Attention), 1u);
  EXPECT_EQ(countKind(*g, OpKind::Softmax), 0u);
  EXPECT_EQ(countKind(*g, OpKind::Expand), 0u) << "K and V are read before their repeat";
}

TEST_F(FlexConvImport, FlexAttentionCausalScoreModFusesCausal) {
  onnx::GraphProto mod = causalMod();
  addFlexAttention(graph(), &mod);
  std::unique_ptr<Graph> g = import(2);
  ASSERT_EQ(countKind(*g, OpKind::Attention), 1u);
  for (const Node *node : g->nodeList()) {
    if (node->kind() == OpKind::Attention) {
      EXPECT_EQ(node->getInt("is_causal", 0), 1);
    }
  }
  EXPECT_EQ(countKind(*g, OpKind::Where), 0u);
}

TEST_F(FlexConvImport, FlexAttentionSoftCapRunsUnfused) {
  onnx::GraphProto mod = softCapMod();
  addFlexAttention(graph(), &mod);
  std::unique_ptr<Graph> g = import(2);
  EXPECT_EQ(countKind(*g, OpKind::Attention), 0u);
  EXPECT_EQ(countKind(*g, OpKind::Tanh), 1u);
  expectCompiledMatchesReference(*g, {{"Q", randomOf(DType::F32, {1, 8, 5, 16}, 21, -3, 3)},
                                      {"K", randomOf(DType::F32, {1, 2, 5, 16}, 22, -3, 3)},
                                      {"V", randomOf(DType::F32, {1, 2, 5, 16}, 23)}});
}

} // namespace
