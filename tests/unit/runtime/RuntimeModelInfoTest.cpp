//===- tests/unit/runtime/RuntimeModelInfoTest.cpp - onnxc/model_info.h ------===//
#include "LoweringTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "driver/ModelLibrary.h"
#include "onnxc/onnxc.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace onnxc;
using namespace onnxc::lowertest;

namespace {

// batch*seq*256 + 64, with batch = symbol 0 and seq = symbol 1 (model_abi.h's own example).
const int64_t kPolynomial[] = {2, 256, 2, 0, 1, 64, 0};
const int64_t kConstant[] = {1, 384, 0};
const int64_t kZero[] = {0};
const int64_t kSymbol[] = {1, 1, 1, 1};

std::unique_ptr<JitModel> compileSample() {
  std::unique_ptr<Graph> graph = parseGraph(R"(
graph @sample(%x: f32[batch, seq, 4]) -> (%y: f32[batch, seq, 4]) {
  %y = Relu(%x)
  return %y
}
)");
  return compileModelJit(*graph, compileTarget());
}

} // namespace

TEST(RuntimeModelInfo, TermsAreReadAsEncoded) {
  ASSERT_EQ(onnxc_dim_num_terms(kPolynomial), 2);
  onnxc_dim_term first = onnxc_dim_get_term(kPolynomial, 0);
  EXPECT_EQ(first.coefficient, 256);
  ASSERT_EQ(first.degree, 2);
  EXPECT_EQ(first.symbols[0], 0);
  EXPECT_EQ(first.symbols[1], 1);
  onnxc_dim_term second = onnxc_dim_get_term(kPolynomial, 1);
  EXPECT_EQ(second.coefficient, 64);
  EXPECT_EQ(second.degree, 0);
  onnxc_dim_term outside = onnxc_dim_get_term(kPolynomial, 2);
  EXPECT_EQ(outside.coefficient, 0);
  EXPECT_EQ(outside.degree, 0);
  EXPECT_EQ(onnxc_dim_get_term(kPolynomial, -1).degree, 0);
}

TEST(RuntimeModelInfo, ConstantsHaveTheirValueAndSymbolsNone) {
  int64_t value = -1;
  EXPECT_TRUE(onnxc_dim_is_constant(kConstant, &value));
  EXPECT_EQ(value, 384);
  EXPECT_TRUE(onnxc_dim_is_constant(kZero, &value));
  EXPECT_EQ(value, 0);
  EXPECT_TRUE(onnxc_dim_is_constant(kConstant, nullptr));
  value = -1;
  EXPECT_FALSE(onnxc_dim_is_constant(kSymbol, &value));
  EXPECT_FALSE(onnxc_dim_is_constant(kPolynomial, &value));
  EXPECT_EQ(value, -1) << "a symbolic dim leaves the value alone";
}

TEST(RuntimeModelInfo, FormatUsesTheModelsSymbolNamesAndTruncates) {
  std::unique_ptr<JitModel> jit = compileSample();
  const onnxc_model_descriptor &model = *jit->descriptor();
  ASSERT_EQ(model.num_symbols, 2);
  std::string batch = model.symbol_names[0], seq = model.symbol_names[1];
  std::string whole = "256*" + batch + "*" + seq + " + 64";
  char text[64];
  EXPECT_EQ(onnxc_dim_format(&model, kPolynomial, text, sizeof text), whole.size());
  EXPECT_EQ(std::string(text), whole);
  char small[5];
  EXPECT_EQ(onnxc_dim_format(&model, kPolynomial, small, sizeof small), whole.size());
  EXPECT_EQ(std::string(small), whole.substr(0, 4));
  EXPECT_EQ(onnxc_dim_format(&model, kZero, nullptr, 0), 1u) << "the dim 0 reads \"0\"";
  EXPECT_EQ(onnxc_dim_format(&model, kSymbol, text, sizeof text), seq.size());
  EXPECT_EQ(std::string(text), seq);
}

TEST(RuntimeModelInfo, CheckPassesACompiledModelAndNamesWhatIsWrong) {
  std::unique_ptr<JitModel> jit = compileSample();
  EXPECT_EQ(onnxc_model_check(jit->descriptor()), nullptr);
  EXPECT_STREQ(onnxc_model_check(nullptr), "the model descriptor is NULL");

  onnxc_model_descriptor wrongAbi = *jit->descriptor();
  wrongAbi.abi_version = ONNXC_ABI_VERSION + 1;
  const char *problem = onnxc_model_check(&wrongAbi);
  ASSERT_NE(problem, nullptr);
  EXPECT_NE(std::string(problem).find("ABI v" + std::to_string(ONNXC_ABI_VERSION + 1)),
            std::string::npos)
      << problem;

  // A dim naming a symbol the model does not have: the reader would index out of bounds.
  onnxc_model_descriptor badDim = *jit->descriptor();
  onnxc_tensor_info input = badDim.inputs[0];
  const int64_t outOfRange[] = {1, 1, 1, 7};
  onnxc_dim_expr dims[] = {outOfRange, input.dims[1], input.dims[2]};
  input.dims = dims;
  badDim.inputs = &input;
  problem = onnxc_model_check(&badDim);
  ASSERT_NE(problem, nullptr);
  EXPECT_NE(std::string(problem).find("sample"), std::string::npos) << problem;
}

TEST(RuntimeModelInfo, SignatureGraphDecodesTheInputDims) {
  std::unique_ptr<JitModel> jit = compileSample();
  std::unique_ptr<Graph> signature = signatureGraph(*jit->descriptor());
  ASSERT_EQ(signature->inputs().size(), 1u);
  const Shape &shape = signature->inputs()[0]->shape();
  ASSERT_EQ(shape.rank(), 3u);
  EXPECT_TRUE(shape[0].isSymbol());
  EXPECT_TRUE(shape[1].isSymbol());
  EXPECT_EQ(shape[2].constant(), 4);
}
