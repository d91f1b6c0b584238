//===- tests/unit/frontend/OnnxExporterTest.cpp - ir::Graph -> ONNX model ------------===//
//
// The exporter's model is read back with the importer and evaluated: what
// comes back must compute what went in. The structure of the rewrites of
// onnxc's own ops is checked on the ModelProto itself.
//
//===----------------------------------------------------------------------===//
#include "exporter/OnnxExporter.h"
#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <unistd.h>

using namespace onnxc;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Graph> parsed(const std::string &text) {
  std::unique_ptr<Graph> graph = parseGraph(text);
  verifyGraph(*graph);
  inferShapes(*graph);
  return graph;
}

std::vector<std::string> opTypes(const onnx::ModelProto &model) {
  std::vector<std::string> ops;
  for (const onnx::NodeProto &node : model.graph().node())
    ops.push_back((node.domain().empty() ? "" : node.domain() + "::") + node.op_type());
  return ops;
}

const char *kMlp = "graph @mlp(%x: f32[batch, 4]) -> (%y: f32[batch, 4], %x_again: f32[batch, 4], "
                   "%w_out: f32[4, 4]) {\n"
                   "  const %w: f32[4, 4] = dense<[1.0, -2.0, 0.5, 0.0, 3.0, 1.0, -1.0, 2.0, 0.25, "
                   "0.5, 1.5, -0.5, 2.0, 0.0, 1.0, 1.0]>\n"
                   "  const %b: f32[4] = dense<[0.5, -0.5, 1.0, 0.0]>\n"
                   "  %m = MatMul(%x, %w)\n"
                   "  %a = Add(%m, %b)\n"
                   "  %y = Gelu(%a) {approximate = \"tanh\"}\n"
                   "  return %y, %x, %w\n"
                   "}\n";

TEST(OnnxExporter, ImportedBackComputesTheSame) {
  std::unique_ptr<Graph> graph = parsed(kMlp);
  fs::path file =
      fs::temp_directory_path() / ("onnxc-export-" + std::to_string(getpid()) + ".onnx");
  writeOnnxFile(*graph, file.string());
  std::unique_ptr<Graph> back = importOnnxFile(file.string());
  fs::remove(file);

  ASSERT_EQ(back->inputs().size(), 1u);
  EXPECT_EQ(back->inputs()[0]->name(), "x");
  EXPECT_EQ(back->inputs()[0]->type().str(), "f32[batch, 4]");
  ASSERT_EQ(back->outputs().size(), 3u);
  EXPECT_EQ(back->outputs()[1].name, "x_again");
  EXPECT_EQ(back->outputs()[2].name, "w_out");
  Tensor x = Tensor::fromVector<float>({3, 4}, {1, 2, 3, 4, -1, 0, 1, 2, 0.5f, 0.25f, -3, 8});
  std::vector<Tensor> want = evaluateGraph(*graph, {{"x", x}});
  std::vector<Tensor> got = evaluateGraph(*back, {{"x", x}});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(got[i].identicalTo(want[i])) << "output " << i;
}

TEST(OnnxExporter, WritesOpset23WithSymbolicDimsAndRawInitializers) {
  std::unique_ptr<Graph> graph = parsed(kMlp);
  onnx::ModelProto model = exportOnnxModel(*graph);
  EXPECT_EQ(model.ir_version(), kExportIrVersion);
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).domain(), "");
  EXPECT_EQ(model.opset_import(0).version(), 23);
  const onnx::TensorShapeProto &shape = model.graph().input(0).type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(0).dim_param(), "batch");
  EXPECT_EQ(shape.dim(1).dim_value(), 4);
  ASSERT_EQ(model.graph().initializer_size(), 2);
  EXPECT_EQ(model.graph().initializer(0).raw_data().size(), 16 * sizeof(float));
  EXPECT_EQ(opTypes(model),
            (std::vector<std::string>{"MatMul", "Add", "Gelu", "Identity", "Identity"}));
}

// LinearAttention is an ONNX op of opset 27: written as itself at that opset (IR version 13),
// with an absent past_state left as an empty input, and imported back unchanged.
TEST(OnnxExporter, LinearAttentionIsWrittenAtOpset27) {
  std::unique_ptr<Graph> graph = parsed(
      "graph @la(%q: f32[b, t, 8], %k: f32[b, t, 8], %v: f32[b, t, 4], %g: f32[b, t, 2],\n"
      "          %beta: f32[b, t, 1]) -> (%y: f32[b, t, 8], %s: f32[b, 2, 4, 2]) {\n"
      "  %y, %s = LinearAttention(%q, %k, %v, _, %g, %beta) {kv_num_heads = 2, q_num_heads = 2}\n"
      "  return %y, %s\n"
      "}\n");
  onnx::ModelProto model = exportOnnxModel(*graph);
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).version(), 27);
  EXPECT_EQ(model.ir_version(), 13);
  ASSERT_EQ(opTypes(model), std::vector<std::string>{"LinearAttention"});
  EXPECT_EQ(model.graph().node(0).input(3), "");
  fs::path file =
      fs::temp_directory_path() / ("onnxc-export-la-" + std::to_string(getpid()) + ".onnx");
  writeOnnxFile(*graph, file.string());
  std::unique_ptr<Graph> back = importOnnxFile(file.string());
  fs::remove(file);
  std::map<std::string, Tensor> inputs;
  unsigned seed = 1;
  for (const Value *input : graph->inputs()) {
    std::vector<int64_t> dims = {2, 3, *input->shape()[2].constant()};
    Tensor t(DType::F32, dims);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.setElementFromDouble(i, 0.1 * double((i * 7 + seed) % 11) - 0.5);
    inputs[input->name()] = t;
    ++seed;
  }
  std::vector<Tensor> want = evaluateGraph(*graph, inputs), got = evaluateGraph(*back, inputs);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(got[i].identicalTo(want[i])) << "output " << i;
}

TEST(OnnxExporter, FourBitConstantsArePackedAndReadBack) {
  std::unique_ptr<Graph> graph = parsed(R"(
graph @w(%a: f32[1, 3]) -> (%y: f32[1, 2]) {
  const %w: i4[3, 2] = dense<[-8, 7, 0, 1, -1, 3]>
  const %s: f32[2, 2] = dense<[0.5, 1.0, 2.0, 4.0]>
  %d = DequantizeLinear(%w, %s) {axis = 0, block_size = 2}
  %y = MatMul(%a, %d)
  return %y
}
)");
  onnx::ModelProto model = exportOnnxModel(*graph);
  const onnx::TensorProto *w = nullptr;
  for (const onnx::TensorProto &t : model.graph().initializer())
    if (t.name() == "w")
      w = &t;
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->data_type(), 22); // INT4
  // Two a byte, low nibble first: (-8, 7), (0, 1), (-1, 3).
  EXPECT_EQ(w->raw_data(), std::string("\x78\x10\x3f", 3));
  fs::path file =
      fs::temp_directory_path() / ("onnxc-export-i4-" + std::to_string(getpid()) + ".onnx");
  writeOnnxFile(*graph, file.string());
  std::unique_ptr<Graph> back = importOnnxFile(file.string());
  fs::remove(file);
  Tensor a = Tensor::fromVector<float>({1, 3}, {1, 2, 3});
  std::vector<Tensor> want = evaluateGraph(*graph, {{"a", a}});
  std::vector<Tensor> got = evaluateGraph(*back, {{"a", a}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].identicalTo(want[0]));
}

TEST(OnnxExporter, SkipLayerNormBecomesAddAndLayerNorm) {
  std::unique_ptr<Graph> graph =
      parsed("graph @skip(%x: f32[2, 8], %h: f32[2, 8]) -> (%y: f32[2, 8], %sum: f32[2, 8]) {\n"
             "  const %g: f32[8] = dense<[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]>\n"
             "  %y, %sum = SkipLayerNormalization(%x, %h, %g) {axis = -1, epsilon = 1e-05}\n"
             "  return %y, %sum\n"
             "}\n");
  OnnxExportReport report;
  onnx::ModelProto model = exportOnnxModel(*graph, {}, &report);
  EXPECT_TRUE(report.customOps.empty());
  ASSERT_EQ(opTypes(model), (std::vector<std::string>{"Add", "LayerNormalization"}));
  EXPECT_EQ(model.graph().node(0).output(0), "sum");
  EXPECT_EQ(model.graph().node(1).input(0), "sum");
  EXPECT_EQ(model.graph().node(1).output(0), "y");
}

TEST(OnnxExporter, AttentionWithoutAStandardFormIsCustomAndReported) {
  // A small fill replaces hidden scores; with a symbolic head count there is
  // no constant to split the heads by, so the op stays onnxc's.
  std::unique_ptr<Graph> graph =
      parsed("graph @a(%q: f32[1, h, 4, 8], %m: bool[1, 1, 4, 4]) -> (%y: f32[1, h, 4, 8]) {\n"
             "  %y = Attention(%q, %q, %q, %m) {mask_fill = -10000.0}\n"
             "  return %y\n"
             "}\n");
  OnnxExportReport report;
  onnx::ModelProto model = exportOnnxModel(*graph, {}, &report);
  EXPECT_EQ(report.customOps, (std::set<std::string>{"Attention"}));
  EXPECT_EQ(opTypes(model), (std::vector<std::string>{"onnxc::Attention"}));
  ASSERT_EQ(model.opset_import_size(), 2);
  EXPECT_EQ(model.opset_import(1).domain(), kOnnxcDomain);
}

TEST(OnnxExporter, ElidedConstantIsAnErrorNamingIt) {
  std::unique_ptr<Graph> graph = parsed("graph @e(%x: f32[65]) -> (%y: f32[65]) {\n"
                                        "  const %big: f32[65] = dense<elided>\n"
                                        "  %y = Add(%x, %big)\n"
                                        "  return %y\n"
                                        "}\n");
  try {
    exportOnnxModel(*graph);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("constant 'big': its contents are elided"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
