//===- tests/unit/frontend/FrontendContribOpsTest.cpp - com.microsoft norms, GELUs -===//
//
// The IR form of onnxruntime's contrib normalization and activation ops
// (frontend/ops/MicrosoftNormalizationOps.cpp) and the one-line refusals of
// the forms onnxc does not import. Their numbers are checked against
// onnxruntime in tests/models/test_contrib_models.py.
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace onnxc;
namespace fs = std::filesystem;

namespace {

class ContribImport : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("onnxc-fe-contrib-" + std::to_string(getpid()) + "-" + info->name());
    fs::create_directories(root_);
    model_.set_ir_version(8);
    for (auto [domain, version] : {std::pair<const char *, int64_t>{"", 17},
                                   std::pair<const char *, int64_t>{"com.microsoft", 1}}) {
      auto *opset = model_.add_opset_import();
      opset->set_domain(domain);
      opset->set_version(version);
    }
    graph()->set_name("g");
  }
  void TearDown() override { fs::remove_all(root_); }

  onnx::GraphProto *graph() { return model_.mutable_graph(); }
  void addInput(const std::string &name, std::vector<int64_t> dims,
                int elemType = onnx::TensorProto::FLOAT) {
    auto *input = graph()->add_input();
    input->set_name(name);
    auto *tensor = input->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elemType);
    for (int64_t d : dims)
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
  }
  /// x, skip [2, 3, 37] and gamma, beta, bias [37].
  void addNormInputs() {
    addInput("x", {2, 3, 37});
    addInput("skip", {2, 3, 37});
    for (const char *name : {"gamma", "beta", "bias"})
      addInput(name, {37});
  }
  onnx::NodeProto *addNode(const std::string &op, std::vector<std::string> inputs,
                           std::vector<std::string> outputs, const std::string &name,
                           const std::string &domain = "com.microsoft") {
    onnx::NodeProto *node = graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    node->set_domain(domain);
    for (const auto &in : inputs)
      node->add_input(in);
    for (const auto &out : outputs) {
      node->add_output(out);
      if (!out.empty())
        graph()->add_output()->set_name(out);
    }
    return node;
  }
  static void setFloat(onnx::NodeProto *node, const std::string &name, float value) {
    auto *attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::FLOAT);
    attr->set_f(value);
  }
  static void setInt(onnx::NodeProto *node, const std::string &name, int64_t value) {
    auto *attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
  }
  std::string write() {
    std::string path = (root_ / "model.onnx").string();
    std::ofstream out(path, std::ios::binary);
    model_.SerializeToOstream(&out);
    return path;
  }
  std::unique_ptr<Graph> import() { return importOnnxFile(write()); }
  /// The error of importing the model, without the path prefix.
  std::string importError() {
    std::string path = write();
    try {
      importOnnxFile(path);
    } catch (const Error &e) {
      std::string message = e.what();
      return message.rfind(path + ": ", 0) == 0 ? message.substr(path.size() + 2) : message;
    }
    return "";
  }
  /// The node defining the graph value `name`.
  static const Node &producer(const Graph &g, const std::string &name) {
    const Value *value = g.findValue(name);
    EXPECT_NE(value, nullptr) << name;
    EXPECT_NE(value->definingNode(), nullptr) << name;
    return *value->definingNode();
  }

  fs::path root_;
  onnx::ModelProto model_;
};

} // namespace

TEST_F(ContribImport, SimplifiedLayerNormalizationIsRmsNorm) {
  addInput("x", {2, 3, 37});
  addInput("scale", {37});
  auto *node = addNode("SimplifiedLayerNormalization", {"x", "scale"}, {"y", "inv"}, "rms", "");
  setFloat(node, "epsilon", 1e-6f);
  setInt(node, "axis", -1);
  auto g = import();
  const Node &rms = producer(*g, "y");
  EXPECT_EQ(rms.kind(), OpKind::RMSNormalization);
  EXPECT_EQ(rms.getFloat("epsilon", 0), 1e-6f);
  EXPECT_EQ(rms.getInt("axis", 0), -1);
  EXPECT_EQ(rms.getInt("stash_type", 0), 1);
  // X is brought to the scale's type (a CastLike that simplify-casts removes here).
  EXPECT_EQ(rms.operand(0)->definingNode()->kind(), OpKind::CastLike);
  EXPECT_EQ(g->findValue("y")->type().str(), "f32[2, 3, 37]");
  // inv_std_var: 1 / sqrt(mean(x^2) + eps), one per row, in f32.
  EXPECT_EQ(producer(*g, "inv").kind(), OpKind::Reciprocal);
  EXPECT_EQ(g->findValue("inv")->type().str(), "f32[2, 3, 1]");
}

TEST_F(ContribImport, SimplifiedLayerNormalizationRefusals) {
  addInput("x", {2, 3, 37});
  addInput("scale", {37});
  auto *node = addNode("SimplifiedLayerNormalization", {"x", "scale"}, {"y"}, "rms", "");
  setInt(node, "stash_type", 10);
  EXPECT_EQ(importError(), "node 'rms': stash_type 10 is not supported (1: float, 11: double)");
  node->clear_attribute();
  setFloat(node, "epsilon", -1.0f);
  EXPECT_EQ(importError(), "node 'rms': epsilon -1 must be at least 0");
  node->clear_attribute();
  node->set_input(1, "");
  EXPECT_EQ(importError(),
            "node 'rms': SimplifiedLayerNormalization needs input 1 (inputs X, scale)");
}

TEST_F(ContribImport, SkipLayerNormalizationIsAddThenLayerNorm) {
  addNormInputs();
  auto *node = addNode("SkipLayerNormalization", {"x", "skip", "gamma", "beta", "bias"},
                       {"y", "", "", "sum"}, "sln");
  setFloat(node, "epsilon", 1e-5f);
  auto g = import();
  const Node &norm = producer(*g, "y");
  EXPECT_EQ(norm.kind(), OpKind::LayerNormalization);
  EXPECT_EQ(norm.getFloat("epsilon", 0), 1e-5f);
  EXPECT_EQ(norm.operand(2), g->findValue("beta"));
  // The bias goes onto the skip, so the Add the norm reads has two full-shape operands.
  const Node &sum = producer(*g, "sum");
  EXPECT_EQ(norm.operand(0), sum.result(0));
  EXPECT_EQ(sum.kind(), OpKind::Add);
  EXPECT_EQ(sum.operand(0), g->findValue("x"));
  const Node *skipBias = sum.operand(1)->definingNode();
  ASSERT_NE(skipBias, nullptr);
  EXPECT_EQ(skipBias->operand(0), g->findValue("skip"));
  EXPECT_EQ(skipBias->operand(1), g->findValue("bias"));
}

TEST_F(ContribImport, SkipLayerNormalizationDefaultsAndBroadcastSkip) {
  addInput("x", {2, 3, 37});
  addInput("skip", {3, 37});
  addInput("gamma", {37});
  addNode("SkipLayerNormalization", {"x", "skip", "gamma"}, {"y"}, "sln");
  auto g = import();
  const Node &norm = producer(*g, "y");
  EXPECT_EQ(norm.getFloat("epsilon", 0), 1e-12f); // the contrib op's default
  EXPECT_EQ(norm.numOperands(), 2u);
  EXPECT_EQ(g->findValue("y")->type().str(), "f32[2, 3, 37]");
}

TEST_F(ContribImport, SkipSimplifiedLayerNormalizationIsAddThenRmsNorm) {
  addNormInputs();
  addNode("SkipSimplifiedLayerNormalization", {"x", "skip", "gamma", "bias"}, {"y"}, "ssln");
  auto g = import();
  const Node &norm = producer(*g, "y");
  EXPECT_EQ(norm.kind(), OpKind::RMSNormalization);
  EXPECT_EQ(norm.operand(0)->definingNode()->kind(), OpKind::Add);
  EXPECT_EQ(norm.operand(1), g->findValue("gamma"));
}

TEST_F(ContribImport, SkipNormRefusals) {
  addNormInputs();
  auto *node = addNode("SkipLayerNormalization", {"x", "skip", "gamma"}, {"y", "mean"}, "sln");
  EXPECT_EQ(importError(),
            "node 'sln': outputs mean and inv_std_var of SkipLayerNormalization are not supported "
            "(onnxruntime's kernels do not compute them either)");
  graph()->clear_output();
  node->clear_output();
  node->add_output("y");
  graph()->add_output()->set_name("y");
  node->set_input(2, "");
  EXPECT_EQ(importError(), "node 'sln': SkipLayerNormalization needs input 2 (inputs input, skip, "
                           "gamma, [beta], [bias])");
  node->set_input(2, "gamma");
  for (const char *extra : {"beta", "bias", "x"})
    node->add_input(extra);
  EXPECT_EQ(importError(), "node 'sln': SkipLayerNormalization takes at most 5 inputs (input, "
                           "skip, gamma, [beta], [bias]), got 6");
  node->mutable_input()->RemoveLast();
  setInt(node, "axis", 1);
  EXPECT_EQ(importError(),
            "node 'sln': attribute 'axis' of SkipLayerNormalization is not supported");
}

TEST_F(ContribImport, EmbedLayerNormalization) {
  for (const char *name : {"ids", "segment_ids", "mask"})
    addInput(name, {2, 5}, onnx::TensorProto::INT32);
  addInput("word", {50, 37});
  addInput("position", {16, 37});
  addInput("segment", {2, 37});
  addInput("gamma", {37});
  addInput("beta", {37});
  addNode("EmbedLayerNormalization",
          {"ids", "segment_ids", "word", "position", "segment", "gamma", "beta", "mask"},
          {"y", "mask_index", "sum"}, "embed");
  auto g = import();
  EXPECT_EQ(producer(*g, "y").kind(), OpKind::LayerNormalization);
  EXPECT_EQ(producer(*g, "y").operand(0), g->findValue("sum"));
  EXPECT_EQ(g->findValue("sum")->type().str(), "f32[2, 5, 37]");
  // The count of mask entries equal to 1, per row.
  const Node &count = producer(*g, "mask_index");
  EXPECT_EQ(count.kind(), OpKind::ReduceSum);
  EXPECT_EQ(g->findValue("mask_index")->type().str(), "i32[2]");

  graph()->mutable_node(0)->set_input(1, "");
  EXPECT_EQ(importError(), "node 'embed': EmbedLayerNormalization takes segment_ids and "
                           "segment_embedding together or neither");
}

TEST_F(ContribImport, EmbedLayerNormalizationWithoutMask) {
  addInput("ids", {2, 5}, onnx::TensorProto::INT32);
  addInput("word", {50, 37});
  addInput("position", {16, 37});
  addInput("gamma", {37});
  addInput("beta", {37});
  addNode("EmbedLayerNormalization", {"ids", "", "word", "position", "", "gamma", "beta"},
          {"y", "mask_index"}, "embed");
  auto g = import();
  EXPECT_EQ(producer(*g, "mask_index").kind(), OpKind::ConstantOfShape);
  EXPECT_EQ(g->findValue("mask_index")->type().str(), "i32[2]");
  EXPECT_EQ(g->findValue("y")->type().str(), "f32[2, 5, 37]");
}

TEST_F(ContribImport, GeluVariants) {
  addInput("x", {2, 3, 37});
  addInput("bias", {37});
  addNode("FastGelu", {"x", "bias"}, {"fast"}, "fast");
  addNode("BiasGelu", {"x", "bias"}, {"biased"}, "biased");
  addNode("Gelu", {"x"}, {"erf"}, "erf");
  addNode("QuickGelu", {"x"}, {"quick"}, "quick");
  addNode("BiasAdd", {"x", "bias", "x"}, {"sum"}, "sum");
  auto g = import();
  EXPECT_EQ(producer(*g, "fast").kind(), OpKind::Gelu);
  EXPECT_EQ(producer(*g, "fast").getString("approximate", ""), "tanh");
  EXPECT_EQ(producer(*g, "fast").operand(0)->definingNode()->kind(), OpKind::Add);
  EXPECT_EQ(producer(*g, "biased").getString("approximate", "none"), "none");
  EXPECT_EQ(producer(*g, "erf").operand(0), g->findValue("x"));
  const Node &quick = producer(*g, "quick");
  EXPECT_EQ(quick.kind(), OpKind::Mul);
  EXPECT_EQ(quick.operand(1)->definingNode()->kind(), OpKind::Sigmoid);
  EXPECT_EQ(producer(*g, "sum").kind(), OpKind::Add);
}

TEST_F(ContribImport, GeluRefusals) {
  addInput("x", {2, 3, 37});
  auto *node = addNode("QuickGelu", {"x"}, {"y"}, "quick");
  setInt(node, "alpha", 2);
  EXPECT_EQ(importError(), "node 'quick': attribute 'alpha' must be a float");
  node->set_op_type("BiasGelu");
  node->clear_attribute();
  EXPECT_EQ(importError(), "node 'quick': BiasGelu needs input 1 (inputs A, B)");
}

TEST_F(ContribImport, UnimplementedContribOpIsNamed) {
  addInput("x", {2, 2});
  addNode("Inverse", {"x"}, {"y"}, "inv");
  EXPECT_EQ(importError(), "unsupported ops: com.microsoft.Inverse (node 'inv')");
}

TEST_F(ContribImport, OldOpsetModelKeepsContribOps) {
  // ONNX's version converter stops at contrib ops and at onnxruntime's own
  // ONNX-domain norms (LayerNormalization below 17, SimplifiedLayerNormalization),
  // which onnxruntime's optimizer leaves in models of the opset they came at:
  // they are kept out of it and put back.
  model_.mutable_opset_import(0)->set_version(11);
  addNormInputs();
  addNode("SkipLayerNormalization", {"x", "skip", "gamma"}, {"s"}, "sln");
  addNode("Relu", {"s"}, {"r"}, "relu", "");
  addNode("LayerNormalization", {"r", "gamma", "beta"}, {"ln"}, "ln", "");
  addNode("SimplifiedLayerNormalization", {"ln", "gamma"}, {"y"}, "rms", "");
  graph()->clear_output();
  graph()->add_output()->set_name("y");
  auto g = import();
  EXPECT_EQ(producer(*g, "y").kind(), OpKind::RMSNormalization);
  EXPECT_EQ(producer(*g, "ln").kind(), OpKind::LayerNormalization);
  EXPECT_EQ(producer(*g, "r").kind(), OpKind::Relu);
  EXPECT_EQ(producer(*g, "s").kind(), OpKind::LayerNormalization);
  ASSERT_EQ(g->inputs().size(), 5u);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->findValue("y")->type().str(), "f32[2, 3, 37]");
}
