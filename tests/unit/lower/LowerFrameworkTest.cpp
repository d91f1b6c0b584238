//===- tests/unit/lower/LowerFrameworkTest.cpp - Lowering driver, buffers, copies ===//

#include "LoweringTestSupport.h"

#include "codegen/lower/Lowering.h"
#include "ir/Error.h"
#include "ir/OpKind.h"
#include "ir/eval/Evaluator.h"

#include <gtest/gtest.h>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;

TEST(LowerFramework, EveryEvaluatorOpHasALowering) {
  // The compiled path promises every op the reference evaluator runs, the
  // control-flow ones included (If, Loop and Scan: some of their forms are
  // refused naming the node; tests/controlflow, tests/ir/codegen/compile-loop.ir).
  for (unsigned k = 0; k < kNumOpKinds; ++k) {
    OpKind kind = OpKind(k);
    if (hasReferenceKernel(kind)) {
      EXPECT_TRUE(hasLowering(kind)) << "no lowering for " << opName(kind);
    }
  }
}

TEST(LowerFramework, OutputsThatNoKernelWritesAreCopied) {
  // An input returned twice and a constant returned: three copy steps into
  // three distinct Output buffers.
  auto graph = parseGraph(R"(
graph @passthrough(%x: f32[n, 5]) -> (%a: f32[n, 5], %b: f32[n, 5], %c: i64[3]) {
  const %k: i64[3] = dense<[7, -1, 3]>
  return %x, %x, %k
}
)");
  ModelPlan plan = lowerOnly(*graph);
  EXPECT_EQ(plan.steps.size(), 3u);
  ASSERT_EQ(plan.symbols.size(), 1u);
  EXPECT_EQ(plan.symbols[0].name, "n");
  for (int64_t n : {1, 3, 70000})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {n, 5}, 3)}});
}

TEST(LowerFramework, SymbolNotBoundByAnInputIsAnError) {
  auto graph = parseGraph(R"(
graph @unbound(%x: f32[n+1]) -> (%x: f32[n+1]) {
  return %x
}
)");
  try {
    lowerOnly(*graph);
    FAIL() << "lowering succeeded";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("symbol 'n'"), std::string::npos) << error.what();
  }
}

} // namespace
} // namespace onnxc
