//===- tests/unit/frontend/FrontendImportTest.cpp - ONNX graphs -> ir::Graph --------===//
//
// Models are built with the protobuf API, written to a temporary folder and
// imported through importOnnxFile, as the tool does.
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

class FrontendImport : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("onnxc-fe-import-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    model_.set_ir_version(8);
    setOpset(17);
    graph()->set_name("g");
  }
  void TearDown() override { fs::remove_all(root_); }

  onnx::GraphProto *graph() { return model_.mutable_graph(); }
  void setOpset(int64_t version, const std::string &domain = "") {
    model_.clear_opset_import();
    auto *opset = model_.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }
  /// A graph input; dims >= 0 are values, -1 leaves the dim empty.
  void addInput(const std::string &name, std::vector<int64_t> dims,
                int elemType = onnx::TensorProto::FLOAT) {
    auto *tensor = graph()->add_input()->mutable_type()->mutable_tensor_type();
    graph()->mutable_input(graph()->input_size() - 1)->set_name(name);
    tensor->set_elem_type(elemType);
    auto *shape = tensor->mutable_shape();
    for (int64_t d : dims) {
      auto *dim = shape->add_dim();
      if (d >= 0)
        dim->set_dim_value(d);
    }
  }
  onnx::NodeProto *addNode(const std::string &op, std::vector<std::string> inputs,
                           std::vector<std::string> outputs, const std::string &name = "") {
    onnx::NodeProto *node = graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const auto &in : inputs)
      node->add_input(in);
    for (const auto &out : outputs)
      node->add_output(out);
    return node;
  }
  void addOutput(const std::string &name) { graph()->add_output()->set_name(name); }
  std::string write() {
    std::string path = (root_ / "model.onnx").string();
    std::ofstream out(path, std::ios::binary);
    model_.SerializeToOstream(&out);
    return path;
  }
  std::unique_ptr<Graph> import() { return importOnnxFile(write()); }
  /// The error message of importing the model, with the path prefix removed.
  std::string importError() {
    std::string path = write();
    try {
      importOnnxFile(path);
    } catch (const Error &e) {
      std::string message = e.what();
      EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
      return message.substr(std::min(message.size(), path.size() + 2));
    }
    return "";
  }

  fs::path root_;
  onnx::ModelProto model_;
};

onnx::AttributeProto *addAttr(onnx::NodeProto *node, const std::string &name,
                              onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto *attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(type);
  return attr;
}

} // namespace

TEST_F(FrontendImport, SimpleGraphWithWeights) {
  addInput("x", {2, 3});
  onnx::TensorProto *w = graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float v : {1.0f, 2.0f, 3.0f})
    w->add_float_data(v);
  addInput("w", {3}); // listed as an input too, as old exporters do
  addNode("Add", {"x", "w"}, {"y"}, "add");
  addNode("Relu", {"y"}, {"z"}, "relu");
  addOutput("z");
  auto g = import();
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->name(), "x");
  EXPECT_EQ(g->inputs()[0]->type().str(), "f32[2, 3]");
  ASSERT_EQ(g->constants().size(), 1u);
  EXPECT_EQ(g->constants()[0]->constantValue().data<float>()[2], 3.0f);
  ASSERT_EQ(g->numNodes(), 2u);
  Node *relu = g->nodeList()[1];
  EXPECT_EQ(relu->kind(), OpKind::Relu);
  EXPECT_EQ(relu->name(), "relu");
  EXPECT_EQ(relu->operand(0)->definingNode()->operand(1), g->constants()[0]);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0].name, "z");
  EXPECT_EQ(g->outputs()[0].value, relu->result());
  EXPECT_EQ(g->name(), "g");
}

TEST_F(FrontendImport, ConstantNodeKinds) {
  auto *value =
      addAttr(addNode("Constant", {}, {"c_tensor"}), "value", onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT32);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_int32_data(4);
  value->mutable_t()->add_int32_data(5);
  addAttr(addNode("Constant", {}, {"c_float"}), "value_float", onnx::AttributeProto::FLOAT)
      ->set_f(0.5f);
  auto *floats =
      addAttr(addNode("Constant", {}, {"c_floats"}), "value_floats", onnx::AttributeProto::FLOATS);
  floats->add_floats(1.0f);
  floats->add_floats(2.0f);
  addAttr(addNode("Constant", {}, {"c_int"}), "value_int", onnx::AttributeProto::INT)->set_i(-3);
  auto *ints =
      addAttr(addNode("Constant", {}, {"c_ints"}), "value_ints", onnx::AttributeProto::INTS);
  for (int64_t v : {7, 8, 9})
    ints->add_ints(v);
  for (const char *name : {"c_tensor", "c_float", "c_floats", "c_int", "c_ints"})
    addOutput(name);
  auto g = import();
  EXPECT_EQ(g->numNodes(), 0u);
  ASSERT_EQ(g->constants().size(), 5u);
  EXPECT_EQ(g->findValue("c_tensor")->constantValue().toInt64Vector(),
            (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(g->findValue("c_tensor")->dtype(), DType::I32);
  EXPECT_EQ(g->findValue("c_float")->type().str(), "f32[]");
  EXPECT_EQ(g->findValue("c_float")->constantValue().data<float>()[0], 0.5f);
  EXPECT_EQ(g->findValue("c_floats")->type().str(), "f32[2]");
  EXPECT_EQ(g->findValue("c_int")->type().str(), "i64[]");
  EXPECT_EQ(g->findValue("c_int")->constantValue().toInt64Vector(), (std::vector<int64_t>{-3}));
  EXPECT_EQ(g->findValue("c_ints")->constantValue().toInt64Vector(),
            (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(g->outputs()[3].value, g->findValue("c_int"));
}

TEST_F(FrontendImport, UnsupportedConstantKinds) {
  addAttr(addNode("Constant", {}, {"s"}, "strings"), "value_string", onnx::AttributeProto::STRING)
      ->set_s("hi");
  addOutput("s");
  EXPECT_EQ(importError(), "node 'strings': string constants are not supported");
  // A sparse value is made dense; one with an empty value tensor and a
  // non-empty shape is rejected by the checks on its parts.
  graph()->clear_node();
  onnx::AttributeProto *sparse = addAttr(addNode("Constant", {}, {"s"}, "sparse"), "sparse_value",
                                         onnx::AttributeProto::SPARSE_TENSOR);
  sparse->mutable_sparse_tensor()->add_dims(3);
  sparse->mutable_sparse_tensor()->mutable_values()->set_data_type(onnx::TensorProto::FLOAT);
  sparse->mutable_sparse_tensor()->mutable_values()->add_dims(1);
  sparse->mutable_sparse_tensor()->mutable_values()->add_float_data(2.0f);
  sparse->mutable_sparse_tensor()->mutable_indices()->set_data_type(onnx::TensorProto::INT64);
  sparse->mutable_sparse_tensor()->mutable_indices()->add_dims(1);
  sparse->mutable_sparse_tensor()->mutable_indices()->add_int64_data(2);
  std::unique_ptr<Graph> g = import();
  const Value *s = g->outputs()[0].value;
  ASSERT_TRUE(s->isConstant());
  EXPECT_EQ(s->constantValue().data<float>()[2], 2.0f);
  EXPECT_EQ(s->constantValue().data<float>()[0], 0.0f);
}

TEST_F(FrontendImport, OpsetRange) {
  addInput("x", {1});
  addNode("Relu", {"x"}, {"y"});
  addOutput("y");
  setOpset(6);
  EXPECT_EQ(importError(), "opset 6 of ai.onnx is not supported (supported: 7 to 28)");
  setOpset(29);
  EXPECT_EQ(importError(), "opset 29 of ai.onnx is not supported (supported: 7 to 28)");
  setOpset(28);
  EXPECT_EQ(import()->numNodes(), 1u);
  setOpset(7); // converted to 13 on import (FrontendOpsetConversionTest.cpp)
  EXPECT_EQ(import()->numNodes(), 1u);
  setOpset(13, "ai.onnx");
  EXPECT_EQ(import()->numNodes(), 1u);
  setOpset(23);
  EXPECT_EQ(import()->numNodes(), 1u);
}

TEST_F(FrontendImport, UndefinedInputAndDuplicates) {
  addInput("x", {1});
  addNode("Add", {"x", "nope"}, {"y"}, "b");
  addOutput("y");
  EXPECT_EQ(importError(), "node 'b': input 'nope' is not defined");
  graph()->clear_node();
  addNode("Relu", {"x"}, {"y"}, "first");
  addNode("Neg", {"x"}, {"y"}, "second");
  EXPECT_EQ(importError(), "node 'second': output 'y' is already defined");
  graph()->clear_node();
  addNode("Relu", {"x"}, {"x"}, "shadow");
  EXPECT_EQ(importError(), "node 'shadow': output 'x' is already defined");
  graph()->clear_node();
  addNode("Relu", {"x"}, {"z"});
  EXPECT_EQ(importError(), "graph output 'y' is not defined");
}

TEST_F(FrontendImport, CycleIsReported) {
  addInput("x", {1});
  addNode("Add", {"x", "c"}, {"a"}, "n1");
  addNode("Relu", {"a"}, {"b"}, "n2");
  addNode("Neg", {"b"}, {"c"}, "n3");
  addOutput("b");
  std::string message = importError();
  EXPECT_NE(message.find("is on a cycle"), std::string::npos) << message;
  EXPECT_EQ(message.rfind("node 'n", 0), 0u) << message;
}

TEST_F(FrontendImport, NodesOutOfOrderAreSorted) {
  addInput("x", {1});
  addNode("Neg", {"a"}, {"b"}, "second");
  addNode("Relu", {"x"}, {"a"}, "first");
  addOutput("b");
  auto g = import();
  ASSERT_EQ(g->numNodes(), 2u);
  EXPECT_EQ(g->nodeList()[0]->name(), "first");
  EXPECT_EQ(g->nodeList()[1]->operand(0), g->nodeList()[0]->result());
}

TEST_F(FrontendImport, AllUnsupportedOpsReportedTogether) {
  addInput("x", {1});
  addNode("Foo", {"x"}, {"a"}, "a");
  addNode("Relu", {"a"}, {"r"}, "r");
  addNode("Bar", {"r"}, {"b"}, "b");
  addNode("Bar", {"b"}, {"c"}, "c");
  addOutput("c");
  EXPECT_EQ(importError(), "unsupported ops: Foo (node 'a'), Bar (nodes 'b', 'c')");
}

TEST_F(FrontendImport, OtherDomainsAndTooNewOpsAreUnsupported) {
  auto *opset = model_.add_opset_import();
  opset->set_domain("com.microsoft");
  opset->set_version(1);
  addInput("x", {1});
  addNode("FusedGelu", {"x"}, {"a"}, "ms")->set_domain("com.microsoft");
  addNode("Gelu", {"a"}, {"b"}, "gelu"); // Gelu appeared at opset 20
  addOutput("b");
  EXPECT_EQ(importError(),
            "unsupported ops: com.microsoft.FusedGelu (node 'ms'), Gelu (node 'gelu')");
  setOpset(20);
  graph()->mutable_node()->DeleteSubrange(0, 1);
  graph()->mutable_node(0)->set_input(0, "x");
  EXPECT_EQ(import()->nodeList()[0]->kind(), OpKind::Gelu);
}

TEST_F(FrontendImport, ReduceMeanAxesAttributeBecomesOperand) {
  setOpset(13);
  addInput("x", {2, 3});
  onnx::NodeProto *node = addNode("ReduceMean", {"x"}, {"m"}, "mean");
  auto *axes = addAttr(node, "axes", onnx::AttributeProto::INTS);
  axes->add_ints(-1);
  addAttr(node, "keepdims", onnx::AttributeProto::INT)->set_i(1);
  addNode("ReduceMax", {"x"}, {"all"}, "max"); // no axes: reduce everything
  addOutput("m");
  addOutput("all");
  auto g = import();
  Node *mean = g->nodeList()[0];
  ASSERT_EQ(mean->numOperands(), 2u);
  ASSERT_TRUE(mean->operand(1)->isConstant());
  EXPECT_EQ(mean->operand(1)->constantValue().toInt64Vector(), (std::vector<int64_t>{-1}));
  EXPECT_EQ(mean->operand(1)->type().str(), "i64[1]");
  EXPECT_FALSE(mean->hasAttr("axes"));
  EXPECT_EQ(mean->getInt("keepdims", 0), 1);
  EXPECT_EQ(g->nodeList()[1]->numOperands(), 1u);

  // At opset 18 axes is already an input and passes through.
  setOpset(18);
  graph()->clear_node();
  graph()->clear_output();
  onnx::TensorProto *init = graph()->add_initializer();
  init->set_name("axes");
  init->set_data_type(onnx::TensorProto::INT64);
  init->add_dims(1);
  init->add_int64_data(0);
  addNode("ReduceMean", {"x", "axes"}, {"m"}, "mean");
  addOutput("m");
  g = import();
  EXPECT_EQ(g->nodeList()[0]->operand(1), g->findValue("axes"));
}

TEST_F(FrontendImport, NormReductionsTakeAxesAsAttributeBefore18) {
  for (const char *op : {"ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    setOpset(13);
    graph()->clear_node();
    graph()->clear_output();
    graph()->clear_input();
    addInput("x", {2, 3});
    onnx::NodeProto *node = addNode(op, {"x"}, {"r"}, "norm");
    addAttr(node, "axes", onnx::AttributeProto::INTS)->add_ints(1);
    addAttr(node, "keepdims", onnx::AttributeProto::INT)->set_i(0);
    addOutput("r");
    auto g = import();
    Node *reduce = g->nodeList()[0];
    EXPECT_EQ(reduce->opName(), std::string(op));
    ASSERT_EQ(reduce->numOperands(), 2u);
    EXPECT_EQ(reduce->operand(1)->constantValue().toInt64Vector(), (std::vector<int64_t>{1}));
    EXPECT_EQ(reduce->result(0)->type().str(), "f32[2]");
    // An axes input before opset 18 is refused, as for the other Reduce*.
    node->add_input("x");
    EXPECT_NE(importError().find("takes its axes as an attribute"), std::string::npos);
  }
}

TEST_F(FrontendImport, ScatterNDReductionsByOpset) {
  auto build = [&](int64_t opset, const char *reduction) {
    setOpset(opset);
    graph()->clear_node();
    graph()->clear_output();
    graph()->clear_input();
    addInput("x", {4});
    addInput("i", {2, 1}, onnx::TensorProto::INT64);
    addInput("u", {2});
    onnx::NodeProto *node = addNode("ScatterND", {"x", "i", "u"}, {"y"}, "fill");
    if (reduction)
      addAttr(node, "reduction", onnx::AttributeProto::STRING)->set_s(reduction);
    addOutput("y");
  };
  build(13, nullptr);
  EXPECT_EQ(import()->nodeList()[0]->kind(), OpKind::ScatterND);
  build(16, "mul");
  EXPECT_EQ(import()->nodeList()[0]->getString("reduction", ""), "mul");
  build(18, "max");
  EXPECT_EQ(import()->nodeList()[0]->getString("reduction", ""), "max");
  build(13, "add");
  EXPECT_EQ(importError(),
            "node 'fill': ScatterND reduction 'add' is not defined at opset 13 (none)");
  build(17, "min");
  EXPECT_EQ(importError(),
            "node 'fill': ScatterND reduction 'min' is not defined at opset 17 (none, add, mul)");
}

TEST_F(FrontendImport, SplitBefore18GetsNumOutputs) {
  setOpset(13);
  addInput("x", {4});
  addNode("Split", {"x"}, {"a", "b"}, "split");
  addOutput("a");
  addOutput("b");
  auto g = import();
  EXPECT_EQ(g->nodeList()[0]->getInt("num_outputs", 0), 2);
  EXPECT_EQ(g->nodeList()[0]->numResults(), 2u);
}

TEST_F(FrontendImport, SymbolicAndMissingDims) {
  addInput("input ids", {-1, 8, -1}, onnx::TensorProto::INT64);
  auto *dims = graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("batch size");
  addInput("mask", {-1, -1}, onnx::TensorProto::BOOL);
  dims = graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("batch size");
  dims->mutable_dim(1)->set_dim_param("2seq");
  addInput("anything", {});
  graph()->mutable_input(2)->mutable_type()->mutable_tensor_type()->clear_shape();
  addOutput("mask");
  auto g = import();
  EXPECT_EQ(g->inputs()[0]->type().str(), "i64[batch_size, 8, input_ids_d2]");
  EXPECT_EQ(g->inputs()[1]->type().str(), "bool[batch_size, _2seq]");
  EXPECT_EQ(g->inputs()[2]->type().str(), "f32[*]");

  graph()
      ->mutable_input(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(-4);
  EXPECT_EQ(importError(), "graph input 'mask': dimension 1 is negative (-4)");
  // -1 is how paddle2onnx and tf2onnx write a dynamic dimension.
  graph()
      ->mutable_input(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(-1);
  EXPECT_EQ(import()->inputs()[1]->type().str(), "bool[batch_size, mask_d1]");
  // So is "?": each one a symbol of its own, not one shared symbol.
  dims = graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(1)->set_dim_param("?");
  dims->mutable_dim(2)->set_dim_param("?");
  EXPECT_EQ(import()->inputs()[0]->type().str(), "i64[batch_size, input_ids_d1, input_ids_d2]");
  // inspect shows both as unknown, not as a dim of -1 or a symbol named '?'.
  ModelSummary summary = summarizeOnnxFile(write());
  EXPECT_EQ(summary.inputs[0], "input ids: i64[batch_size, ?, ?]");
  EXPECT_EQ(summary.inputs[1], "mask: bool[batch_size, ?]");
}

TEST_F(FrontendImport, OptionalInputsAndOutputs) {
  addInput("x", {4});
  addInput("hi", {});
  addNode("Clip", {"x", "", "hi"}, {"c1"}, "clip_max");
  addNode("Clip", {"x", "", ""}, {"c2"}, "clip_none");
  addNode("Dropout", {"c2"}, {"d", ""}, "drop");
  addNode("Dropout", {"d"}, {"", "mask"}, "drop2");
  addOutput("c1");
  addOutput("mask");
  auto g = import();
  auto nodes = g->nodeList();
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0]->numOperands(), 3u);
  EXPECT_EQ(nodes[0]->operand(1), nullptr);
  EXPECT_EQ(nodes[0]->operand(2), g->findValue("hi"));
  EXPECT_EQ(nodes[1]->numOperands(), 1u);
  EXPECT_EQ(nodes[2]->numResults(), 1u);
  ASSERT_EQ(nodes[3]->numResults(), 2u);
  EXPECT_FALSE(nodes[3]->result(0)->name().empty());
  EXPECT_EQ(nodes[3]->result(1)->name(), "mask");
}

TEST_F(FrontendImport, BadAttributesAndArity) {
  addInput("x", {1});
  onnx::NodeProto *relu = addNode("Relu", {"x"}, {"y"}, "r");
  addAttr(relu, "body", onnx::AttributeProto::GRAPH)->mutable_g()->set_name("sub");
  addOutput("y");
  EXPECT_EQ(importError(), "node 'r': attribute 'body' of type graph is not supported");
  relu->clear_attribute();
  relu->add_input("x");
  EXPECT_EQ(importError(), "node 'r': Relu takes 1 inputs, got 2");
  relu->mutable_input()->RemoveLast();
  addAttr(addNode("Cast", {"x"}, {"s"}, "cast"), "to", onnx::AttributeProto::INT)->set_i(8);
  EXPECT_EQ(importError(), "node 'cast': attribute 'to': unsupported dtype string");
}

TEST_F(FrontendImport, SummaryListsModel) {
  model_.set_producer_name("pytorch");
  model_.set_producer_version("2.1");
  addInput("x", {-1, 4});
  graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("batch");
  onnx::TensorProto *w = graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(2);
  w->set_raw_data(std::string(32, '\0'));
  addNode("MatMul", {"x", "w"}, {"y"}, "mm");
  addNode("Relu", {"y"}, {"z"}, "r1");
  addNode("Relu", {"z"}, {"u"}, "r2");
  addNode("Mystery", {"u"}, {"v"}, "m");
  addOutput("v");
  ModelSummary summary = summarizeOnnxFile(write());
  EXPECT_EQ(summary.producer, "pytorch 2.1");
  EXPECT_EQ(summary.irVersion, 8);
  EXPECT_EQ(summary.opsets.at(""), 17);
  EXPECT_EQ(summary.inputs, (std::vector<std::string>{"x: f32[batch, 4]"}));
  EXPECT_EQ(summary.outputs, (std::vector<std::string>{"v: unknown[*]"}));
  EXPECT_EQ(summary.opHistogram.at("Relu"), 2);
  EXPECT_EQ(uint64_t(summary.numParameters), 8u);
  EXPECT_EQ(uint64_t(summary.parameterBytes), 32u);
  EXPECT_EQ(summary.unsupportedOps, (std::vector<std::string>{"Mystery (node 'm')"}));
}

TEST_F(FrontendImport, SummaryCountsHugeInitializersExactly) {
  // [2^32, 2^32] is 2^64 elements: a 64-bit count wraps to 0, "0 (0 B)".
  addInput("x", {4});
  onnx::TensorProto *w = graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(int64_t(1) << 32);
  w->add_dims(int64_t(1) << 32);
  addNode("Relu", {"x"}, {"y"}, "r");
  addOutput("y");
  ModelSummary summary = summarizeOnnxFile(write());
  unsigned __int128 elements = (unsigned __int128)1 << 64;
  EXPECT_TRUE(summary.numParameters == elements);
  EXPECT_TRUE(summary.parameterBytes == elements * 4);

  // Past 2^128 there is no exact count to give: an error, never a wrap.
  for (int i = 0; i < 3; ++i)
    w->add_dims(int64_t(1) << 32);
  std::string message;
  try {
    summarizeOnnxFile(write());
  } catch (const Error &e) {
    message = e.what();
  }
  EXPECT_NE(message.find("initializer 'w': its dims multiply to more than 2^128 elements"),
            std::string::npos)
      << message;
}

// The ONNX backend node tests are real files from the ONNX exporters' tool
// chain; importing every one must either work or fail with an onnxc::Error.
TEST_F(FrontendImport, BackendNodeTestsNeverCrash) {
  fs::path root = "/usr/include/onnx/backend/test/data/node";
  if (!fs::is_directory(root))
    GTEST_SKIP() << "libonnx-testdata is not installed";
  int imported = 0, refused = 0;
  for (const auto &entry : fs::directory_iterator(root)) {
    fs::path model = entry.path() / "model.onnx";
    if (!fs::exists(model))
      continue;
    try {
      importOnnxFile(model.string());
      ++imported;
    } catch (const Error &e) {
      ++refused;
      EXPECT_EQ(std::string(e.what()).rfind(model.string() + ": ", 0), 0u) << e.what();
    }
  }
  // ~930 cases; most cover ops outside the IR, but the transformer ops are in.
  EXPECT_GT(imported, 250) << refused << " refused";
  for (const char *name :
       {"test_add", "test_matmul_2d", "test_softmax_axis_0", "test_constant",
        "test_reduce_mean_default_axes_keepdims_example", "test_split_equal_parts_1d",
        "test_layer_normalization_2d_axis0", "test_lstm_defaults", "test_gather_0",
        "test_reshape_reordered_all_dims", "test_unsqueeze_axis_0"})
    EXPECT_NO_THROW(importOnnxFile((root / name / "model.onnx").string())) << name;
}

TEST_F(FrontendImport, ExternalInitializerNextToModel) {
  std::vector<float> values = {1.0f, 2.0f};
  std::ofstream(root_ / "w.bin", std::ios::binary)
      .write(reinterpret_cast<const char *>(values.data()), 8);
  onnx::TensorProto *w = graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *location = w->add_external_data();
  location->set_key("location");
  location->set_value("w.bin");
  addOutput("w");
  auto g = import();
  EXPECT_EQ(g->findValue("w")->constantValue().data<float>()[1], 2.0f);

  location->set_value("../w.bin");
  EXPECT_EQ(importError(),
            "initializer 'w': external data path '../w.bin' escapes the model folder");
}
