//===- tests/unit/frontend/FrontendOpsetConversionTest.cpp - Opsets 7-12 on import ---===//
//
// Old-opset models are written with the protobuf API and imported; each is
// checked against the same computation written at opset 13, both run by the
// reference evaluator, so no expected number is typed in here.
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "frontend/OpsetConversion.h"
#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/eval/Evaluator.h"
#include "tests/unit/TestUtil.h"

#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace onnxc;
using onnxc::test::errorOf;
namespace fs = std::filesystem;

namespace {

class OpsetConversion : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("onnxc-opset-conv-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static onnx::ModelProto makeModel(int64_t opset, int64_t irVersion = 7) {
    onnx::ModelProto model;
    model.set_ir_version(irVersion);
    auto *entry = model.add_opset_import();
    entry->set_domain("");
    entry->set_version(opset);
    model.mutable_graph()->set_name("g");
    return model;
  }
  /// A float input; -1 leaves the dim symbolic ("n").
  static void addInput(onnx::ModelProto &model, const std::string &name,
                       std::vector<int64_t> dims) {
    auto *input = model.mutable_graph()->add_input();
    input->set_name(name);
    auto *tensor = input->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) {
      auto *dim = tensor->mutable_shape()->add_dim();
      if (d >= 0)
        dim->set_dim_value(d);
      else
        dim->set_dim_param("n");
    }
  }
  static onnx::NodeProto *addNode(onnx::ModelProto &model, const std::string &op,
                                  std::vector<std::string> inputs, std::vector<std::string> outputs,
                                  const std::string &name = "") {
    onnx::NodeProto *node = model.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const auto &in : inputs)
      node->add_input(in);
    for (const auto &out : outputs)
      node->add_output(out);
    return node;
  }
  static void setInts(onnx::NodeProto *node, const std::string &name, std::vector<int64_t> values) {
    auto *attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values)
      attr->add_ints(v);
  }
  static void setInt(onnx::NodeProto *node, const std::string &name, int64_t value) {
    auto *attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
  }
  static onnx::TensorProto *addWeights(onnx::ModelProto &model, const std::string &name,
                                       std::vector<int64_t> dims, std::vector<float> values) {
    onnx::TensorProto *init = model.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      init->add_dims(d);
    init->set_raw_data(values.data(), values.size() * sizeof(float));
    return init;
  }
  static void addInt64s(onnx::ModelProto &model, const std::string &name,
                        std::vector<int64_t> values) {
    onnx::TensorProto *init = model.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::INT64);
    init->add_dims(int64_t(values.size()));
    for (int64_t v : values)
      init->add_int64_data(v);
  }
  std::string write(const onnx::ModelProto &model, const std::string &file) {
    std::string path = (root_ / file).string();
    std::ofstream out(path, std::ios::binary);
    model.SerializeToOstream(&out);
    return path;
  }
  std::vector<Tensor> run(const onnx::ModelProto &model, const std::string &file,
                          const std::map<std::string, Tensor> &feeds) {
    std::unique_ptr<Graph> graph = importOnnxFile(write(model, file));
    return evaluateGraph(*graph, feeds);
  }
  /// The import error without the path prefix.
  std::string importError(const onnx::ModelProto &model) {
    std::string path = write(model, "bad.onnx");
    std::string message = errorOf([&] { importOnnxFile(path); });
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    return message.substr(std::min(message.size(), path.size() + 2));
  }

  fs::path root_;
};

Tensor ramp(std::vector<int64_t> dims, float scale) {
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d;
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = std::sin(float(i) * scale);
  return Tensor::fromVector<float>(dims, values);
}

void expectSame(const Tensor &actual, const Tensor &expected) {
  ASSERT_EQ(actual.dims(), expected.dims());
  for (int64_t i = 0; i < expected.numElements(); ++i)
    EXPECT_NEAR(actual.data<float>()[i], expected.data<float>()[i], 1e-6f) << "element " << i;
}

} // namespace

// Axes and splits as attributes (inputs from 13), weights listed as graph
// inputs too (IR version 3), digit-only value names as older torch wrote them.
TEST_F(OpsetConversion, AttributeFormsOfOpset11MatchOpset13) {
  onnx::ModelProto old = makeModel(11, 3);
  addInput(old, "0", {-1, 4});
  addWeights(old, "1", {4}, {0.5f, -1.0f, 2.0f, 0.25f});
  addInput(old, "1", {4});
  addNode(old, "Add", {"0", "1"}, {"2"}, "add");
  setInts(addNode(old, "Unsqueeze", {"2"}, {"3"}, "unsqueeze"), "axes", {0});
  setInts(addNode(old, "ReduceSum", {"3"}, {"4"}, "sum"), "axes", {2});
  auto *split = addNode(old, "Split", {"2"}, {"5", "6"}, "split");
  setInt(split, "axis", 1);
  setInts(split, "split", {1, 3});
  for (const char *name : {"4", "6"})
    old.mutable_graph()->add_output()->set_name(name);

  onnx::ModelProto now = makeModel(13);
  addInput(now, "0", {-1, 4});
  addWeights(now, "1", {4}, {0.5f, -1.0f, 2.0f, 0.25f});
  addInt64s(now, "zero", {0});
  addInt64s(now, "two", {2});
  addInt64s(now, "sizes", {1, 3});
  addNode(now, "Add", {"0", "1"}, {"2"});
  addNode(now, "Unsqueeze", {"2", "zero"}, {"3"});
  addNode(now, "ReduceSum", {"3", "two"}, {"4"});
  setInt(addNode(now, "Split", {"2", "sizes"}, {"5", "6"}), "axis", 1);
  for (const char *name : {"4", "6"})
    now.mutable_graph()->add_output()->set_name(name);

  std::map<std::string, Tensor> feeds{{"0", ramp({3, 4}, 0.7f)}};
  std::unique_ptr<Graph> imported = importOnnxFile(write(old, "old.onnx"));
  ASSERT_EQ(imported->inputs().size(), 1u); // the weight stays a constant
  ASSERT_EQ(imported->outputs().size(), 2u);
  EXPECT_EQ(imported->outputs()[0].name, "4");
  EXPECT_EQ(imported->outputs()[1].name, "6");
  std::vector<Tensor> actual = evaluateGraph(*imported, feeds);
  std::vector<Tensor> expected = run(now, "now.onnx", feeds);
  ASSERT_EQ(actual.size(), 2u);
  expectSame(actual[0], expected[0]);
  expectSame(actual[1], expected[1]);
}

// Before 13 Softmax normalized over everything from `axis` on; the rank of
// the input is known here only at run time.
TEST_F(OpsetConversion, LegacySoftmaxFlattensFromItsAxis) {
  for (const char *op : {"Softmax", "LogSoftmax"}) {
    onnx::ModelProto old = makeModel(12);
    addInput(old, "x", {});
    old.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    setInt(addNode(old, op, {"x"}, {"y"}, "sm"), "axis", 1);
    old.mutable_graph()->add_output()->set_name("y");

    onnx::ModelProto now = makeModel(13);
    addInput(now, "x", {2, 3, 4});
    addInt64s(now, "rows", {2, 12});
    addInt64s(now, "back", {2, 3, 4});
    addNode(now, "Reshape", {"x", "rows"}, {"r"});
    setInt(addNode(now, op, {"r"}, {"s"}), "axis", -1);
    addNode(now, "Reshape", {"s", "back"}, {"y"});
    now.mutable_graph()->add_output()->set_name("y");

    std::map<std::string, Tensor> feeds{{"x", ramp({2, 3, 4}, 1.3f)}};
    expectSame(run(old, "old.onnx", feeds)[0], run(now, "now.onnx", feeds)[0]);
  }
}

// With `axis` the last one the node stays one node (as the attention fusion
// wants it): the file states the rank, or shape inference finds it after import.
TEST_F(OpsetConversion, LegacySoftmaxOnLastAxisStaysOneNode) {
  onnx::ModelProto old = makeModel(11);
  addInput(old, "x", {-1, 3, 5});
  setInt(addNode(old, "Softmax", {"x"}, {"y"}, "sm"), "axis", 2);
  old.mutable_graph()->add_output()->set_name("y");
  std::unique_ptr<Graph> graph = importOnnxFile(write(old, "old.onnx"));
  EXPECT_EQ(graph->numNodes(), 1u);

  onnx::ModelProto inferred = makeModel(11);
  addInput(inferred, "x", {-1, 3, 5});
  addNode(inferred, "Relu", {"x"}, {"r"}, "relu");
  setInt(addNode(inferred, "LogSoftmax", {"r"}, {"y"}, "sm"), "axis", 2);
  inferred.mutable_graph()->add_output()->set_name("y");
  graph = importOnnxFile(write(inferred, "inferred.onnx"));
  ASSERT_EQ(graph->numNodes(), 2u);
  EXPECT_EQ(graph->outputs()[0].value->definingNode()->kind(), OpKind::LogSoftmax);
  EXPECT_EQ(graph->outputs()[0].value->name(), "y");
  Tensor x = ramp({2, 3, 5}, 0.3f);
  std::vector<Tensor> y = evaluateGraph(*graph, {{"x", x}});
  // Each row of 5 sums to one once exponentiated.
  for (int64_t row = 0; row < 6; ++row) {
    float sum = 0;
    for (int64_t k = 0; k < 5; ++k)
      sum += std::exp(y[0].data<float>()[row * 5 + k]);
    EXPECT_NEAR(sum, 1.0f, 1e-5f) << row;
  }
}

// The converter loses external data by itself; the importer keeps it.
TEST_F(OpsetConversion, ExternalWeightsSurvive) {
  std::vector<float> weights(300);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = float(i) * 0.5f;
  {
    std::ofstream out(root_ / "weights.bin", std::ios::binary);
    out.write(reinterpret_cast<const char *>(weights.data()), weights.size() * sizeof(float));
  }
  onnx::ModelProto old = makeModel(10);
  addInput(old, "x", {300});
  onnx::TensorProto *w = old.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(300);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  addNode(old, "Mul", {"x", "w"}, {"y"}, "mul");
  old.mutable_graph()->add_output()->set_name("y");
  std::vector<std::string> files;
  std::unique_ptr<Graph> graph = importOnnxFile(write(old, "old.onnx"), &files);
  EXPECT_EQ(files.size(), 1u);
  Tensor ones = Tensor::fromVector<float>({300}, std::vector<float>(300, 1.0f));
  Tensor y = evaluateGraph(*graph, {{"x", ones}})[0];
  for (size_t i = 0; i < weights.size(); ++i)
    ASSERT_EQ(y.data<float>()[i], weights[i]) << i;
}

// Names the converter invents ("7", ...) must not clash with the model's.
TEST_F(OpsetConversion, ConverterNamesDoNotClashWithNumberedValues) {
  onnx::ModelProto old = makeModel(12);
  addInput(old, "0", {2});
  std::string last = "0";
  for (int i = 1; i <= 40; ++i) {
    std::string next = std::to_string(i);
    if (i % 4 == 0)
      setInts(addNode(old, "Unsqueeze", {last}, {next}), "axes", {0});
    else
      addNode(old, "Relu", {last}, {next});
    last = next;
  }
  old.mutable_graph()->add_output()->set_name(last);
  std::unique_ptr<Graph> graph = importOnnxFile(write(old, "old.onnx"));
  EXPECT_EQ(graph->outputs()[0].name, "40");
  Tensor y = evaluateGraph(*graph, {{"0", ramp({2}, 1.0f)}})[0];
  EXPECT_EQ(y.dims().size(), 11u);
}

TEST_F(OpsetConversion, ErrorsNameTheNodeAndVersion) {
  onnx::ModelProto tooOld = makeModel(6);
  addInput(tooOld, "x", {1});
  addNode(tooOld, "Relu", {"x"}, {"y"});
  tooOld.mutable_graph()->add_output()->set_name("y");
  EXPECT_EQ(importError(tooOld), "opset 6 of ai.onnx is not supported (supported: 7 to 28)");

  // What onnxc lacks is reported before any conversion, by the file's names.
  onnx::ModelProto missing = makeModel(9);
  addInput(missing, "x", {1, 1, 2, 2});
  addInput(missing, "scales", {4});
  addNode(missing, "TfIdfVectorizer", {"x"}, {"t"}, "tfidf");
  addNode(missing, "Relu", {"x"}, {"y"}, "relu");
  missing.mutable_graph()->add_output()->set_name("y");
  EXPECT_EQ(importError(missing), "unsupported ops: TfIdfVectorizer (node 'tfidf')");

  // BatchNormalization-7 with spatial=0 has no opset-9 form.
  onnx::ModelProto refused = makeModel(8);
  addInput(refused, "x", {1, 2, 2});
  for (const char *name : {"scale", "bias", "mean", "var"})
    addWeights(refused, name, {2, 2}, {1.0f, 1.0f, 1.0f, 1.0f});
  setInt(addNode(refused, "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn"),
         "spatial", 0);
  refused.mutable_graph()->add_output()->set_name("y");
  std::string message = importError(refused);
  EXPECT_EQ(
      message.rfind("node 'bn': BatchNormalization-7 could not be converted to opset 13: ", 0), 0u)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

// Upsample and Resize-10 sampled at output / scale, rounding down; the
// converter's Resize-11 would default to half-pixel rounding.
TEST_F(OpsetConversion, Resize10KeepsAsymmetricCoordinates) {
  onnx::ModelProto old = makeModel(9);
  addInput(old, "x", {1, 1, 2, 2});
  addInput(old, "scales", {4});
  addNode(old, "Upsample", {"x", "scales"}, {"y"}, "up");
  old.mutable_graph()->add_output()->set_name("y");
  ASSERT_TRUE(convertOldOpset(old));
  EXPECT_EQ(old.opset_import(0).version(), 13);
  const onnx::NodeProto *resize = nullptr;
  for (const onnx::NodeProto &node : old.graph().node())
    if (node.op_type() == "Resize")
      resize = &node;
  ASSERT_NE(resize, nullptr);
  std::map<std::string, std::string> strings;
  for (const onnx::AttributeProto &attr : resize->attribute())
    strings[attr.name()] = attr.s();
  EXPECT_EQ(strings["coordinate_transformation_mode"], "asymmetric");
  EXPECT_EQ(strings["nearest_mode"], "floor");
  EXPECT_EQ(old.graph().output(0).name(), "y");
}

// inspect names what the converted model would lack, without converting.
TEST_F(OpsetConversion, SummaryListsOpsMissingAfterConversion) {
  onnx::ModelProto old = makeModel(10);
  addInput(old, "x", {4});
  addNode(old, "Relu", {"x"}, {"r"}, "relu");
  addNode(old, "TfIdfVectorizer", {"r"}, {"y"}, "tfidf");
  old.mutable_graph()->add_output()->set_name("y");
  ModelSummary summary = summarizeOnnxFile(write(old, "old.onnx"));
  EXPECT_EQ(summary.opsets.at(""), 10);
  ASSERT_EQ(summary.unsupportedOps.size(), 1u);
  EXPECT_EQ(summary.unsupportedOps[0], "TfIdfVectorizer (node 'tfidf')");
}
