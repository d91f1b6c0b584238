//===- tests/unit/lower/LowerLoopTest.cpp - Loop and Scan through codegen --------===//
//
// Loops compiled through lowering + JIT + runtime against the reference
// evaluator (trip counts from inputs' contents and dims, zero iterations,
// several threads, carried values in place, copied and trading places,
// captures the arena must keep, a loop in an If branch, Scan slices along a
// middle axis in reverse), the shape of the step list they become, and the
// loops codegen refuses.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;
using test::errorOf;

/// h = MatMul(Tanh(h), w): computed in place (the old h is read first);
/// acc = acc + Exp(x) * h: one fused step reads the old acc and writes the
/// new, so it is copied. %e, an outer intermediate, is read by every
/// iteration after the body's own buffers are planned.
const char *kRecurrence = R"(
graph @recurrence(%m: i64[], %h0: f32[4], %x: f32[n, 4]) -> (%h: f32[4], %acc: f32[n, 4]) {
  const %w: f32[4, 4] = dense<[0.5, -0.25, 0.125, 0.0, 0.25, 0.5, -0.5, 0.25, -0.125, 0.0, 0.5, 0.5, 0.0, 0.25, 0.25, -0.5]>
  %e = Exp(%x)
  %zeros = Sub(%x, %x)
  %h, %acc = Loop(%m, _, %h0, %zeros, %w, %e) {captures = 2} body = graph @body(%i: i64[], %c: bool[], %h_in: f32[4], %acc_in: f32[n, 4], %w: f32[4, 4], %e: f32[n, 4]) -> (%c: bool[], %h_out: f32[4], %acc_out: f32[n, 4]) {
    %t = Tanh(%h_in)
    %h_out = MatMul(%t, %w)
    %eh = Mul(%e, %h_out)
    %acc_out = Add(%acc_in, %eh)
    return %c, %h_out, %acc_out
  }
  return %h, %acc
}
)";

TEST(LowerLoop, RunTimeTripCountMatchesTheReference) {
  auto graph = parseGraph(kRecurrence);
  struct Case {
    int64_t m, n;
    int threads;
  };
  for (Case c : {Case{0, 3, 1}, Case{1, 700, 3}, Case{7, 3, 1}, Case{40, 700, 3}}) {
    SCOPED_TRACE("m = " + std::to_string(c.m) + ", n = " + std::to_string(c.n));
    expectCompiledMatchesReference(*graph,
                                   {{"m", Tensor::scalar<int64_t>(c.m)},
                                    {"h0", randomOf(DType::F32, {4}, 1)},
                                    {"x", randomOf(DType::F32, {c.n, 4}, 2)}},
                                   1e-4, 1e-6, c.threads);
  }
}

const PlanStep *findStep(const ModelPlan &plan, const std::string &name, size_t *index = nullptr) {
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].name == name) {
      if (index)
        *index = s;
      return &plan.steps[s];
    }
  return nullptr;
}

TEST(LowerLoop, TheBodyRunsBetweenAnEntryAndABackEdge) {
  ModelPlan plan = lowerOnly(*parseGraph(kRecurrence));
  size_t entry = 0, backEdge = 0;
  const PlanStep *enter = findStep(plan, "Loop %h (enter)", &entry);
  const PlanStep *next = findStep(plan, "Loop %h (next iteration)", &backEdge);
  ASSERT_TRUE(enter && next);
  EXPECT_TRUE(enter->isBranch && next->isBranch);
  EXPECT_EQ(size_t(enter->branchTarget), backEdge + 1);
  EXPECT_EQ(size_t(next->branchTarget), entry + 1);
  EXPECT_LT(entry + 1, backEdge);
  // h is computed in place; acc is read and written by one step: copied.
  EXPECT_EQ(findStep(plan, "carry 'h'"), nullptr);
  EXPECT_NE(findStep(plan, "carry 'acc'"), nullptr);
  // The outer intermediate every iteration reads lives across the loop.
  for (const PlanBuffer &buffer : plan.buffers) {
    if (buffer.kind == BufferKind::Intermediate && buffer.firstStep < int32_t(entry) &&
        buffer.lastStep > int32_t(entry)) {
      EXPECT_GE(buffer.lastStep, int32_t(backEdge));
    }
  }
}

TEST(LowerLoop, ACarriedTensorUpdatedByScatterNDStaysInPlace) {
  // torch's `out[t] = ...` in a loop: ScatterND copies the carried tensor,
  // then writes one row. The copy (and the carry back) would cost O(n) per
  // iteration; the tensor is updated in place instead.
  auto graph = parseGraph(R"(
graph @fill(%x: f32[n, 4]) -> (%out: f32[n, 4]) {
  const %zero: i64[] = dense<0>
  %shape = Shape(%x)
  %m = Gather(%shape, %zero) {axis = 0}
  %z = Sub(%x, %x)
  %out = Loop(%m, _, %z, %x) {captures = 1} body = graph @body(%i: i64[], %c: bool[], %acc: f32[n, 4], %x: f32[n, 4]) -> (%c: bool[], %next: f32[n, 4]) {
    const %axes: i64[1] = dense<[0]>
    %row = Gather(%x, %i) {axis = 0}
    %sq = Mul(%row, %row)
    %idx = Unsqueeze(%i, %axes)
    %idx2 = Unsqueeze(%idx, %axes)
    %upd = Unsqueeze(%sq, %axes)
    %next = ScatterND(%acc, %idx2, %upd)
    return %c, %next
  }
  return %out
}
)");
  ModelPlan plan = lowerOnly(*graph);
  bool elided = false;
  for (const PlanStep &step : plan.steps)
    elided = elided || step.name.find("(elided: updated in place)") != std::string::npos;
  EXPECT_TRUE(elided);
  EXPECT_EQ(findStep(plan, "carry 'out'"), nullptr);
  for (int64_t n : {1, 9})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {n, 4}, 12)}});
}

TEST(LowerLoop, InPlaceLooksThroughNestedLoops) {
  // The outer carried value's new rows are the inner loop's scan output,
  // written row by row while the inner body still reads the old value: in
  // the body's step order the read comes first, but the inner loop runs it
  // again after the first row is written. The inner entry names both
  // buffers (they live across its iterations), so the new value is not
  // computed in place.
  auto graph = parseGraph(R"(
graph @nested(%m: i64[], %v0: f32[3, 2]) -> (%v: f32[3, 2]) {
  %v = Loop(%m, _, %v0) body = graph @outer(%i: i64[], %c: bool[], %v_in: f32[3, 2]) -> (%c: bool[], %rows: f32[3, 2]) {
    const %three: i64[] = dense<3>
    %rows = Loop(%three, _, %v_in) {captures = 1} body = graph @inner(%j: i64[], %c2: bool[], %v_in: f32[3, 2]) -> (%c2: bool[], %row: f32[2]) {
      %r = Gather(%v_in, %j) {axis = 0}
      %total = ReduceSum(%v_in) {keepdims = 0}
      %row = Add(%r, %total)
      return %c2, %row
    }
    return %c, %rows
  }
  return %v
}
)");
  EXPECT_NE(findStep(lowerOnly(*graph), "carry 'v'"), nullptr);
  for (int64_t m : {1, 3})
    expectCompiledMatchesReference(
        *graph, {{"m", Tensor::scalar<int64_t>(m)}, {"v0", randomOf(DType::F32, {3, 2}, 13)}});
}

TEST(LowerLoop, CarriedValuesThatTradePlaces) {
  // (a, b) -> (b, a + 1): the old b must reach a after the new b is made.
  auto graph = parseGraph(R"(
graph @swap(%m: i64[], %a0: f32[3], %b0: f32[3]) -> (%a: f32[3], %b: f32[3]) {
  %a, %b = Loop(%m, _, %a0, %b0) body = graph @body(%i: i64[], %c: bool[], %a_in: f32[3], %b_in: f32[3]) -> (%c: bool[], %a_out: f32[3], %b_out: f32[3]) {
    const %one: f32[] = dense<1.0>
    %a_next = Add(%a_in, %one)
    return %c, %b_in, %a_next
  }
  return %a, %b
}
)");
  EXPECT_NE(findStep(lowerOnly(*graph), "carry 'a' aside"), nullptr);
  for (int64_t m : {0, 1, 2, 5})
    expectCompiledMatchesReference(*graph, {{"m", Tensor::scalar<int64_t>(m)},
                                            {"a0", randomOf(DType::F32, {3}, 3)},
                                            {"b0", randomOf(DType::F32, {3}, 4)}});
}

TEST(LowerLoop, WhileLoopStopsWhereTheBodySays) {
  // No M: the loop runs until the body's condition turns false.
  auto graph = parseGraph(R"(
graph @halve(%x: f32[k], %floor: f32[]) -> (%y: f32[k], %steps: i64[]) {
  const %zero: i64[] = dense<0>
  const %true: bool[] = dense<true>
  %y, %steps = Loop(_, %true, %x, %zero, %floor) {captures = 1} body = graph @body(%i: i64[], %c: bool[], %v: f32[k], %s: i64[], %floor: f32[]) -> (%go: bool[], %half: f32[k], %s_next: i64[]) {
    const %two: f32[] = dense<2.0>
    const %one: i64[] = dense<1>
    %half = Div(%v, %two)
    %s_next = Add(%s, %one)
    %top = ReduceMax(%half) {keepdims = 0}
    %go = Greater(%top, %floor)
    return %go, %half, %s_next
  }
  return %y, %steps
}
)");
  for (float floor : {100.0f, 0.5f, 0.001f})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {6}, 5, 1.0, 4.0)},
                                            {"floor", Tensor::scalar<float>(floor)}});
}

TEST(LowerLoop, ALoopInASkippedBranchDoesNotRun) {
  auto graph = parseGraph(R"(
graph @branchy(%c: bool[], %x: f32[n]) -> (%y: f32[n]) {
  %y = If(%c, %x) then_branch = graph @then(%x: f32[n]) -> (%t: f32[n]) {
    const %three: i64[] = dense<3>
    %t = Loop(%three, _, %x) body = graph @body(%i: i64[], %cond: bool[], %v: f32[n]) -> (%cond: bool[], %w: f32[n]) {
      %w = Sin(%v)
      return %cond, %w
    }
    return %t
  } else_branch = graph @else(%x: f32[n]) -> (%e: f32[n]) {
    %e = Neg(%x)
    return %e
  }
  return %y
}
)");
  for (bool c : {true, false})
    expectCompiledMatchesReference(
        *graph, {{"c", Tensor::boolScalar(c)}, {"x", randomOf(DType::F32, {5}, 6)}});
}

TEST(LowerScan, MiddleAxisReversedBothWays) {
  // Slices along axis 1 of [2, n, 3] are not contiguous: copied out and in.
  auto graph = parseGraph(R"(
graph @scan(%s0: f32[2, 3], %x: f32[2, n, 3]) -> (%s: f32[2, 3], %ys: f32[2, n, 3], %zs: f32[n, 2, 3]) {
  %s, %ys, %zs = Scan(%s0, %x) {num_scan_inputs = 1, scan_input_axes = [1], scan_input_directions = [1], scan_output_axes = [1, 0], scan_output_directions = [1, 0]} body = graph @body(%st: f32[2, 3], %xr: f32[2, 3]) -> (%st_out: f32[2, 3], %y: f32[2, 3], %z: f32[2, 3]) {
    %st_out = Add(%st, %xr)
    %y = Mul(%st_out, %xr)
    %z = Tanh(%st_out)
    return %st_out, %y, %z
  }
  return %s, %ys, %zs
}
)");
  ModelPlan plan = lowerOnly(*graph);
  EXPECT_NE(findStep(plan, "slice 'x'"), nullptr);
  EXPECT_NE(findStep(plan, "stack 'ys'"), nullptr);
  EXPECT_EQ(findStep(plan, "stack 'zs'"), nullptr); // rows of zs are contiguous: in place
  for (int64_t n : {1, 4, 33})
    expectCompiledMatchesReference(
        *graph,
        {{"s0", randomOf(DType::F32, {2, 3}, 7)}, {"x", randomOf(DType::F32, {2, n, 3}, 8)}}, 1e-4,
        1e-6, 2);
}

TEST(LowerScan, InputsOfDifferentLengthsFailTheRun) {
  auto graph = parseGraph(R"(
graph @pair(%s0: f32[2], %a: f32[n, 2], %b: f32[k, 2]) -> (%s: f32[2]) {
  %s = Scan(%s0, %a, %b) {num_scan_inputs = 2} body = graph @body(%st: f32[2], %ar: f32[2], %br: f32[2]) -> (%st_out: f32[2]) {
    %ab = Mul(%ar, %br)
    %st_out = Add(%st, %ab)
    return %st_out
  }
  return %s
}
)");
  expectCompiledMatchesReference(*graph, {{"s0", randomOf(DType::F32, {2}, 9)},
                                          {"a", randomOf(DType::F32, {4, 2}, 10)},
                                          {"b", randomOf(DType::F32, {4, 2}, 11)}});
  std::string error = errorOf([&] {
    lowertest::runCompiled(*graph, {{"s0", randomOf(DType::F32, {2}, 9)},
                                    {"a", randomOf(DType::F32, {4, 2}, 10)},
                                    {"b", randomOf(DType::F32, {5, 2}, 11)}});
  });
  EXPECT_NE(error.find("the scan inputs of node Scan '%s' differ in length"), std::string::npos)
      << error;
}

TEST(LowerLoop, RefusedInOneLineNamingTheNode) {
  auto grows = parseGraph(R"(
graph @grows(%m: i64[], %v0: f32[2]) -> (%v: f32[?]) {
  %v = Loop(%m, _, %v0) body = graph @b(%i: i64[], %cond: bool[], %v_in: f32[2]) -> (%cond: bool[], %w: f32[?]) {
    %w = Concat(%v_in, %v_in) {axis = 0}
    return %cond, %w
  }
  return %v
}
)");
  EXPECT_NE(
      errorOf([&] { lowerOnly(*grows); })
          .find("node Loop '%v': cannot compile Loop: loop-carried value 'v_in' may change shape "
                "between iterations"),
      std::string::npos);
  auto until = parseGraph(R"(
graph @until(%m: i64[], %v0: f32[2]) -> (%v: f32[2], %trace: f32[?, 2]) {
  %v, %trace = Loop(%m, _, %v0) body = graph @b(%i: i64[], %cond: bool[], %v_in: f32[2]) -> (%go: bool[], %w_next: f32[2], %w_row: f32[2]) {
    %w = Sin(%v_in)
    %top = ReduceMax(%w) {keepdims = 0}
    %zero = Sub(%top, %top)
    %go = Greater(%top, %zero)
    return %go, %w, %w
  }
  return %v, %trace
}
)");
  EXPECT_NE(
      errorOf([&] { lowerOnly(*until); }).find("cannot compile Loop: its scan output 'trace'"),
      std::string::npos);
}

} // namespace
} // namespace onnxc
