//===- tests/unit/lower/LowerConvolutionGemmTest.cpp - Conv on the packed GEMM ---===//
//
// f32 Conv with constant weights compiles to im2col blocks + the packed GEMM
// (codegen/lower/convolution/ConvolutionGemmLowering.cpp). Every case runs at both GEMM
// widths (8 and 16 lanes; LLVM legalizes 16-lane vectors on any x86-64) and
// is compared with the reference evaluator: odd sizes, strides, dilations,
// asymmetric pads, every auto_pad, groups, depthwise (which keeps the loop
// nest), 1-D to 3-D, batch > 1, channel counts off the panel width, a depth
// of several K blocks, more positions than one block, bias and a fused
// Relu / Gelu.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "codegen/ModelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/artifact/DescriptorEmitter.h"
#include "codegen/kernels/GemmPacking.h"
#include "codegen/lower/Lowering.h"
#include "driver/CompiledSession.h"
#include "runtime/CpuFeatures.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace onnxc {
namespace {

using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runReference;

using Inputs = std::map<std::string, Tensor>;

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string text;
  for (int64_t d : dims)
    text += (text.empty() ? "" : ", ") + std::to_string(d);
  return text;
}

/// `const %name: f32[dims] = dense<0x...>` with the tensor's bytes.
std::string constantLine(const std::string &name, const Tensor &tensor) {
  std::string text = "  const %" + name + ": f32[" + dimsText(tensor.dims()) + "] = dense<0x";
  const auto *bytes = static_cast<const uint8_t *>(tensor.rawData());
  char hex[3];
  for (size_t i = 0; i < tensor.byteSize(); ++i) {
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    text += hex;
  }
  return text + ">\n";
}

/// One Conv (constant weights, optional constant bias, optional activation
/// after it) over an input `x` of type `xType` (empty: each input's shape).
struct ConvCase {
  ConvCase(std::string xType, std::vector<int64_t> weightDims, std::string attributes,
           bool bias = true, std::string activation = "")
      : xType(std::move(xType)), weightDims(std::move(weightDims)),
        attributes(std::move(attributes)), bias(bias), activation(std::move(activation)) {}
  std::string xType;
  std::vector<int64_t> weightDims;
  std::string attributes;
  bool bias;
  std::string activation; // "", "Relu" or "Gelu"
};

std::unique_ptr<Graph> convGraph(const ConvCase &c, const std::string &xType, unsigned seed) {
  std::string body = constantLine("w", randomOf(DType::F32, c.weightDims, seed));
  std::string operands = "%x, %w";
  if (c.bias) {
    body += constantLine("b", randomOf(DType::F32, {c.weightDims[0]}, seed + 1));
    operands += ", %b";
  }
  std::string conv = c.activation.empty() ? "y" : "conv";
  body += "  %" + conv + " = Conv(" + operands + ") {" + c.attributes + "}\n";
  if (!c.activation.empty())
    body += "  %y = " + c.activation + "(%conv)\n";
  // The text form declares output types: shape inference on a first parse
  // (with x as the output) says what %y is.
  std::string header = "graph @conv(%x: " + xType + ") -> ";
  auto probe = parseGraph(header + "(%probe: " + xType + ") {\n" + body +
                          "  %probe = Identity(%x)\n  return %probe\n}\n");
  const Value *y = probe->findValue("y");
  EXPECT_TRUE(y);
  return parseGraph(header + "(%y: " + y->type().str() + ") {\n" + body + "  return %y\n}\n");
}

/// Lowers at a GEMM width (and with the bf16 kernel `bf16`, if given) and
/// checks which kernels the Conv became.
std::unique_ptr<JitModel> compileAtWidth(const Graph &graph, int64_t lanes, bool expectGemm,
                                         size_t expectSteps,
                                         std::optional<Bf16GemmIsa> bf16 = std::nullopt) {
  const TargetSelection &target = TargetSelection::select({});
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("conv", *context);
  target.configureModule(*module);
  LoweringOptions options;
  options.gemmLanes = lanes;
  options.bf16Gemm = bf16;
  ModelPlan plan = lowerGraph(graph, *module, options);
  plan.name = "conv";
  bool gemm = false;
  for (const PlanStep &step : plan.steps)
    gemm = gemm || step.kernel->getName().starts_with("conv_gemm");
  EXPECT_EQ(gemm, expectGemm);
  EXPECT_EQ(plan.steps.size(), expectSteps);
  std::string accessor = emitDescriptor(*module, plan);
  return compileModelJit(std::move(module), std::move(context), target, accessor);
}

void expectClose(const Tensor &actual, const Tensor &expected) {
  ASSERT_EQ(actual.dims(), expected.dims());
  int reported = 0;
  for (int64_t i = 0; i < expected.numElements() && reported < 5; ++i) {
    double a = actual.elementAsDouble(i), r = expected.elementAsDouble(i);
    if (!(std::fabs(a - r) <= 1e-4 + 1e-4 * std::fabs(r))) {
      ADD_FAILURE() << "y[" << i << "]: compiled " << a << ", reference " << r;
      ++reported;
    }
  }
}

class LowerConvGemm : public testing::TestWithParam<int64_t> {
protected:
  /// Compiles `c` and compares it at each input shape.
  void check(const ConvCase &c, const std::vector<std::vector<int64_t>> &inputShapes,
             bool expectGemm = true, int threads = 2) {
    SCOPED_TRACE(c.xType + " w [" + dimsText(c.weightDims) + "] {" + c.attributes + "} " +
                 c.activation);
    size_t steps = c.activation.empty() || expectGemm ? 1 : 2;
    // A symbolic input type compiles once for all shapes.
    std::unique_ptr<Graph> graph;
    std::unique_ptr<JitModel> model;
    for (const std::vector<int64_t> &shape : inputShapes) {
      SCOPED_TRACE("x [" + dimsText(shape) + "]");
      if (!model || c.xType.empty()) {
        std::string xType = c.xType.empty() ? "f32[" + dimsText(shape) + "]" : c.xType;
        graph = convGraph(c, xType, unsigned(c.weightDims[0] * 7 + c.weightDims[1]));
        model = compileAtWidth(*graph, GetParam(), expectGemm, steps);
      }
      Tensor x = randomOf(DType::F32, shape, 3);
      std::vector<Tensor> expected = runReference(*graph, {{"x", x}});
      CompiledSession session(model->descriptor(), threads);
      std::vector<Tensor> actual = session.run({&x});
      ASSERT_EQ(actual.size(), 1u);
      expectClose(actual[0], expected[0]);
    }
  }
};

std::string lanesName(const testing::TestParamInfo<int64_t> &info) {
  return std::to_string(info.param) + "lanes";
}

INSTANTIATE_TEST_SUITE_P(Widths, LowerConvGemm, testing::Values(GemmLanesAvx2, GemmLanesAvx512),
                         lanesName);

TEST_P(LowerConvGemm, TwoDimensionalStridesDilationsAsymmetricPads) {
  // Odd sizes, 20 output channels (a partial panel at both widths), pads
  // begin != end, stride 2 along H and dilation 2 along W; batch 1 and 2.
  check({"f32[n, 5, 11, 13]",
         {20, 5, 3, 3},
         "pads = [1, 0, 2, 1], strides = [2, 1], dilations = [1, 2]"},
        {{1, 5, 11, 13}, {2, 5, 11, 13}});
  // A kernel wider than the unrolled copy, padding on every side.
  check({"f32[1, 2, 6, 40]", {9, 2, 2, 35}, "pads = [1, 3, 0, 2]", false}, {{1, 2, 6, 40}});
}

TEST_P(LowerConvGemm, AutoPadModes) {
  for (const char *pad : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    check({"", {17, 3, 4, 3}, std::string("auto_pad = \"") + pad + "\", strides = [2, 3]"},
          {{2, 3, 9, 10}, {2, 3, 4, 10}});
}

TEST_P(LowerConvGemm, GroupsAndDepthwise) {
  // Two groups of 5 output channels each: one GEMM per group.
  check({"f32[n, 6, 8, 7]", {10, 3, 3, 3}, "group = 2, pads = [1, 1, 1, 1]"},
        {{1, 6, 8, 7}, {3, 6, 8, 7}});
  // Four groups of 8 with stride 2.
  check({"f32[2, 12, 9, 9]", {32, 3, 3, 3}, "group = 4, strides = [2, 2]"}, {{2, 12, 9, 9}});
  // Depthwise (one output channel per group) keeps the loop nest.
  check({"f32[2, 6, 8, 7]", {6, 1, 3, 3}, "group = 6, pads = [1, 1, 1, 1]"}, {{2, 6, 8, 7}},
        /*expectGemm=*/false);
}

TEST_P(LowerConvGemm, OneDimensionalLikeWhisper) {
  // Kernel 3, padding 1, stride 1 and 2, over a symbolic length that spans
  // several blocks of rows; a dilated case; one position.
  // (A stride-2 output length is only known for a known input length.)
  for (const char *type : {"f32[b, 7, l]", ""})
    check({type, {36, 7, 3}, std::string("pads = [1, 1], strides = [") + (*type ? "1" : "2") + "]"},
          {{1, 7, 1}, {2, 7, 300}, {1, 7, 97}});
  check({"f32[1, 9, l]", {24, 9, 3}, "pads = [0, 3], dilations = [2]"}, {{1, 9, 20}});
  // 20 channels: two 8 x 8 blocks of the channels-last transposition and a
  // tail, windows at both edges of the input, asymmetric pads.
  check({"f32[b, 20, l]", {24, 20, 3}, "pads = [2, 1]"}, {{2, 20, 45}, {1, 20, 300}});
  check({"", {24, 20, 4}, "pads = [2, 1], strides = [2]"}, {{1, 20, 45}});
}

TEST_P(LowerConvGemm, PatchEmbeddingLikeViT) {
  // Stride = kernel, no padding: the patches are whole rows of input; 196
  // positions over two threads.
  check({"f32[n, 3, 112, 112]", {40, 3, 8, 8}, "strides = [8, 8]"},
        {{1, 3, 112, 112}, {2, 3, 112, 112}});
}

TEST_P(LowerConvGemm, DeepPatchesAndWideOutput) {
  // K = 200 * 9 = 1800 takes two K blocks (A packed); 70 output channels.
  check({"f32[1, 200, 5, 6]", {70, 200, 3, 3}, "pads = [1, 1, 1, 1]"}, {{1, 200, 5, 6}});
}

TEST_P(LowerConvGemm, ThreeDimensional) {
  check({"f32[2, 3, 5, 6, 7]", {8, 3, 2, 3, 2}, "pads = [0, 1, 1, 1, 0, 0], strides = [2, 1, 2]"},
        {{2, 3, 5, 6, 7}});
}

TEST(LowerConvGemmBf16, EveryKernelTheHostRunsWithinTheBound) {
  // --precision=bf16 (codegen/kernels/Bf16Gemm.h): Whisper's and ViT's forms
  // with a fused Gelu, within docs/KERNEL_ACCURACY.md's bound for |x|, |w|
  // <= 1: (2u + u^2 + gamma) * depth <= 0.0079 * depth, plus the bias.
  const TargetSelection &host = TargetSelection::select({});
  std::vector<Bf16GemmIsa> isas = {Bf16GemmIsa::Portable};
  if (host.hasFeature("avx512bf16") && runtime::checkCpuFeatures("avx512bf16,avx512bw").empty())
    isas.push_back(Bf16GemmIsa::Avx512Bf16);
  if (runtime::checkCpuFeatures("avx512bf16,avx512bw,amx-tile,amx-bf16").empty())
    isas.push_back(Bf16GemmIsa::Amx);
  for (Bf16GemmIsa isa : isas) {
    SCOPED_TRACE(bf16GemmIsaName(isa));
    for (const ConvCase &c :
         {ConvCase{"f32[1, 20, 300]", {24, 20, 3}, "pads = [1, 1]", true, "Gelu"},
          ConvCase{"f32[1, 3, 112, 112]", {40, 3, 8, 8}, "strides = [8, 8]"}}) {
      auto graph = convGraph(c, c.xType, 5);
      auto model = compileAtWidth(*graph, GemmLanesAvx512, true, 1, isa);
      Tensor x = randomOf(DType::F32, *graph->inputs()[0]->shape().staticDims(), 3);
      std::vector<Tensor> expected = runReference(*graph, {{"x", x}});
      CompiledSession session(model->descriptor(), 2);
      std::vector<Tensor> actual = session.run({&x});
      const double depth = double(c.weightDims[1] * c.weightDims[2] *
                                  (c.weightDims.size() > 3 ? c.weightDims[3] : 1));
      const double bound = 0.0079 * depth + 1e-5;
      double worst = 0;
      for (int64_t i = 0; i < expected[0].numElements(); ++i)
        worst = std::max(worst,
                         std::fabs(actual[0].elementAsDouble(i) - expected[0].elementAsDouble(i)));
      EXPECT_LE(worst, bound) << c.xType;
      // bf16 really ran: f32 would agree to ~1e-6.
      EXPECT_GT(worst, 1e-5) << c.xType;
    }
  }
}

TEST_P(LowerConvGemm, ActivationFusesIntoTheStore) {
  check({"f32[1, 4, 9, 9]", {12, 4, 3, 3}, "pads = [1, 1, 1, 1]", true, "Relu"}, {{1, 4, 9, 9}});
  check({"", {16, 6, 3}, "pads = [1, 1], strides = [2]", true, "Gelu"}, {{1, 6, 31}});
}

} // namespace
} // namespace onnxc
