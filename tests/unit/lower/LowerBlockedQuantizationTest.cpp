//===- tests/unit/lower/LowerBlockedQuantizationTest.cpp - Blocked Q/DQ, 4-bit values ---===//
//
// The compiled blocked QuantizeLinear / DequantizeLinear and the i4/u4
// values inside a model (constants, Cast to and from 4 bits, data movement)
// against the reference evaluator, bit for bit: symbolic rows, short last
// blocks, blocks along the first, middle and last axis, and rows enough to
// be split over tasks. A 4-bit graph input or output is refused naming it.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runCompiled;

TEST(LowerBlockedQuantization, DequantizeWithShortBlocksOnEachAxis) {
  auto graph = parseGraph(R"(
graph @dq(%x: u8[n, 5], %sx: f32[n, 3], %zx: u8[n, 3], %t: i8[3, 7, 2], %st: f32[3, 2, 2],
          %w: i8[5, 3], %sw: f32[2, 3]) -> (%y: unknown[*], %z: unknown[*], %v: unknown[*]) {
  %y = DequantizeLinear(%x, %sx, %zx) {axis = 1, block_size = 2}
  %z = DequantizeLinear(%t, %st) {axis = 1, block_size = 4}
  %v = DequantizeLinear(%w, %sw) {axis = 0, block_size = 4}
  return %y, %z, %v
}
)");
  for (int64_t rows : {1, 3000}) {
    std::map<std::string, Tensor> inputs = {{"x", randomOf(DType::U8, {rows, 5}, 1, 0, 256)},
                                            {"sx", randomOf(DType::F32, {rows, 3}, 2, 0.01, 1.0)},
                                            {"zx", randomOf(DType::U8, {rows, 3}, 3, 0, 256)},
                                            {"t", randomOf(DType::I8, {3, 7, 2}, 4, -128, 128)},
                                            {"st", randomOf(DType::F32, {3, 2, 2}, 5, 0.01, 1.0)},
                                            {"w", randomOf(DType::I8, {5, 3}, 6, -128, 128)},
                                            {"sw", randomOf(DType::F32, {2, 3}, 7, 0.01, 1.0)}};
    expectCompiledMatchesReference(*graph, inputs, 0, 0, rows > 1 ? 2 : 1);
  }
}

TEST(LowerBlockedQuantization, FourBitValuesInsideTheModel) {
  // Blocked QuantizeLinear to i4 and u4 (saturating), back through DequantizeLinear; Cast to
  // 4 bits (wrapping), Transpose and Gather of 4-bit values, an i4 constant.
  auto graph = parseGraph(R"(
graph @four(%x: f32[n, 6], %s: f32[n, 2], %ids: i64[4]) -> (%d: unknown[*], %du: unknown[*], %q8: unknown[*], %c: unknown[*], %g: unknown[*]) {
  const %table: i4[3, 2] = dense<[-8, 7, 0, 1, -1, 3]>
  %q = QuantizeLinear(%x, %s) {axis = 1, block_size = 3, output_dtype = 22}
  %d = DequantizeLinear(%q, %s) {axis = 1, block_size = 3}
  %qu = QuantizeLinear(%x, %s) {axis = 1, block_size = 3, output_dtype = 21}
  %du = DequantizeLinear(%qu, %s) {axis = 1, block_size = 3}
  %q8 = Cast(%q) {to = 3}
  %w = Cast(%x) {to = 21}
  %wt = Transpose(%w) {perm = [1, 0]}
  %c = Cast(%wt) {to = 6}
  %rows = Gather(%table, %ids) {axis = 0}
  %g = Cast(%rows) {to = 1}
  return %d, %du, %q8, %c, %g
}
)");
  for (int64_t rows : {2, 2000}) {
    std::map<std::string, Tensor> inputs = {
        {"x", randomOf(DType::F32, {rows, 6}, 11, -40.0, 40.0)},
        {"s", randomOf(DType::F32, {rows, 2}, 12, 0.5, 4.0)},
        {"ids", Tensor::fromVector<int64_t>({4}, {2, 0, -1, 1})}};
    expectCompiledMatchesReference(*graph, inputs, 0, 0, rows > 2 ? 2 : 1);
  }
}

TEST(LowerBlockedQuantization, FourBitGraphOutputIsRefused) {
  auto graph = parseGraph(R"(
graph @out(%x: f32[3]) -> (%q: unknown[*]) {
  %q = Cast(%x) {to = 22}
  return %q
}
)");
  std::string error = test::errorOf([&] {
    runCompiled(*graph, {{"x", randomOf(DType::F32, {3}, 1)}});
  });
  EXPECT_NE(error.find("output 'q' is i4: compiled models take no 4-bit inputs or outputs"),
            std::string::npos)
      << error;
}

} // namespace
} // namespace onnxc
