//===- tests/unit/ir/ControlFlowTest.cpp - If, Loop, Scan and their subgraphs ===//
//
// Ownership of subgraphs (erasing a node frees them; inlining moves nested
// ones), what the outer passes may and may not do with them (DCE keeps a
// value read only in a branch, CSE does not merge Ifs with different
// branches), the shape rules' merging, and the reference kernels against
// loops written out in C++.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Subgraph.h"
#include "ir/Verifier.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"
#include "ir/text/Printer.h"
#include "passes/Pass.h"
#include "passes/PassRegistry.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

const char *kIfGraph = R"(
graph @g(%c: bool[], %x: f32[n, 2], %w: f32[n, 2]) -> (%r: f32[?, 2]) {
  %r = If(%c, %x, %w) then_branch = graph @then(%x: f32[n, 2], %w: f32[n, 2]) -> (%o: f32[?, 2]) {
    %o = Sub(%x, %w)
    return %o
  } else_branch = graph @else(%x: f32[n, 2], %w: f32[n, 2]) -> (%o: f32[?, 2]) {
    %o = Concat(%x, %x) {axis = 0}
    return %o
  }
  return %r
}
)";

std::unique_ptr<Graph> parsed(const char *text) {
  std::unique_ptr<Graph> g = parseGraph(text);
  verifyGraph(*g);
  inferShapes(*g);
  return g;
}

void runPass(Graph &g, const char *name) {
  PassContext context(name);
  createPass(name)->run(g, context);
  verifyGraph(g);
}

Tensor matrix(std::vector<float> values) {
  return Tensor::fromVector<float>({int64_t(values.size() / 2), 2}, values);
}

} // namespace

TEST(ControlFlow, CapturesAreOperandsSoDceKeepsThem) {
  auto g = parsed(kIfGraph);
  Value *w = g->findValue("w");
  EXPECT_EQ(w->numUses(), 1u);
  runPass(*g, "dce");
  EXPECT_EQ(countKind(*g, OpKind::If), 1u);
  EXPECT_EQ(numCaptures(*g->nodes().front()), 2u);
}

TEST(ControlFlow, ErasingTheNodeFreesItsSubgraphs) {
  auto g = parsed(kIfGraph);
  Node *ifNode = g->nodes().front().get();
  Value *x = g->findValue("x");
  g->setOutputValue(0, x);
  g->eraseNode(ifNode); // its branches go with it (ASan: no leak, no stale use)
  EXPECT_EQ(g->numNodes(), 0u);
  EXPECT_EQ(x->numUses(), 0u);
  verifyGraph(*g);
}

TEST(ControlFlow, IfMergesBranchShapes) {
  auto g = parsed(kIfGraph);
  const Value *r = g->findValue("r");
  ASSERT_TRUE(r->shape().isRanked());
  EXPECT_TRUE(r->shape()[0].isSymbol()); // n vs n*2: a fresh symbol
  EXPECT_NE(r->shape()[0].symbolName(), "n");
  EXPECT_EQ(r->shape()[1], Dim(2));
  EXPECT_EQ(g->nodes().front()->subgraph("else_branch")->outputs()[0].value->type().str(),
            "f32[n*2, 2]");
}

TEST(ControlFlow, IfRunsTheTakenBranch) {
  auto g = parsed(kIfGraph);
  Tensor x = matrix({1, 2, 3, 4}), w = matrix({0.5f, 0.5f, 1, 1});
  auto take = [&](bool c) {
    return evaluateGraph(*g, {{"c", Tensor::boolScalar(c)}, {"x", x}, {"w", w}})[0];
  };
  expectNear(take(true), {0.5, 1.5, 2, 3});
  Tensor concatenated = take(false);
  EXPECT_EQ(concatenated.dims(), (std::vector<int64_t>{4, 2}));
  expectNear(concatenated, {1, 2, 3, 4, 1, 2, 3, 4});
}

TEST(ControlFlow, CseKeepsIfsWithDifferentBranches) {
  auto g = parsed(R"(
graph @g(%c: bool[], %x: f32[2]) -> (%a: f32[2], %b: f32[2]) {
  %a = If(%c, %x) then_branch = graph @t(%x: f32[2]) -> (%o: f32[2]) {
    %o = Relu(%x)
    return %o
  } else_branch = graph @e(%x: f32[2]) -> (%x: f32[2]) {
    return %x
  }
  %b = If(%c, %x) then_branch = graph @t(%x: f32[2]) -> (%o: f32[2]) {
    %o = Neg(%x)
    return %o
  } else_branch = graph @e(%x: f32[2]) -> (%x: f32[2]) {
    return %x
  }
  return %a, %b
}
)");
  runPass(*g, "cse");
  EXPECT_EQ(countKind(*g, OpKind::If), 2u);
}

TEST(ControlFlow, InliningMovesNestedSubgraphs) {
  auto g = parsed(R"(
graph @g(%c: bool[], %x: f32[2]) -> (%r: f32[2]) {
  const %yes: bool[] = dense<true>
  %r = If(%yes, %c, %x) then_branch = graph @t(%c: bool[], %x: f32[2]) -> (%o: f32[2]) {
    %o = If(%c, %x) then_branch = graph @tt(%x: f32[2]) -> (%p: f32[2]) {
      %p = Neg(%x)
      return %p
    } else_branch = graph @te(%x: f32[2]) -> (%x: f32[2]) {
      return %x
    }
    return %o
  } else_branch = graph @e(%c: bool[], %x: f32[2]) -> (%x: f32[2]) {
    return %x
  }
  return %r
}
)");
  runPass(*g, "inline-constant-if");
  ASSERT_EQ(g->numNodes(), 1u);
  const Node &inner = *g->nodes().front();
  EXPECT_EQ(inner.kind(), OpKind::If);
  EXPECT_EQ(inner.operand(0), g->findValue("c"));
  ASSERT_NE(inner.subgraph("then_branch"), nullptr);
  Tensor x = Tensor::fromVector<float>({2}, {1, -2});
  expectNear(evaluateGraph(*g, {{"c", Tensor::boolScalar(true)}, {"x", x}})[0], {-1, 2});
  expectNear(evaluateGraph(*g, {{"c", Tensor::boolScalar(false)}, {"x", x}})[0], {1, -2});
}

TEST(ControlFlow, LoopCarriesStacksAndStops) {
  // acc = acc * 2 + i while acc < limit, at most M times; emits acc.
  auto g = parsed(R"(
graph @g(%m: i64[], %acc0: f32[3], %limit: f32[]) -> (%acc: f32[3], %trace: f32[?, 3]) {
  %acc, %trace = Loop(%m, _, %acc0, %limit) {captures = 1} body = graph @b(%i: i64[], %cond: bool[], %v: f32[3], %limit: f32[]) -> (%go: bool[], %next: f32[3], %emit: f32[3]) {
    const %two: f32[] = dense<2.0>
    %fi = Cast(%i) {to = 1}
    %twice = Mul(%v, %two)
    %next = Add(%twice, %fi)
    %total = ReduceMax(%next) {keepdims = 0}
    %go = Less(%total, %limit)
    %emit = Identity(%next)
    return %go, %next, %emit
  }
  return %acc, %trace
}
)");
  std::vector<float> acc0{1, 0, -1};
  for (auto [m, limit] : {std::pair{6, 1000.0f}, std::pair{6, 20.0f}, std::pair{0, 1.0f}}) {
    std::vector<float> acc = acc0;
    std::vector<double> trace;
    for (int i = 0; i < m; ++i) {
      float top = -1e30f;
      for (float &v : acc) {
        v = v * 2 + float(i);
        top = std::max(top, v);
      }
      trace.insert(trace.end(), acc.begin(), acc.end());
      if (!(top < limit))
        break;
    }
    auto outputs = evaluateGraph(*g, {{"m", Tensor::scalar<int64_t>(m)},
                                      {"acc0", Tensor::fromVector<float>({3}, acc0)},
                                      {"limit", Tensor::scalar<float>(limit)}});
    expectNear(outputs[0], std::vector<double>(acc.begin(), acc.end()));
    EXPECT_EQ(outputs[1].dims(), (std::vector<int64_t>{int64_t(trace.size() / 3), 3}));
    if (!trace.empty())
      expectNear(outputs[1], trace);
  }
}

TEST(ControlFlow, LoopWidensACarriedShapeThatGrows) {
  auto g = parsed(R"(
graph @g(%m: i64[], %v0: f32[2]) -> (%v: f32[?]) {
  %v = Loop(%m, _, %v0) body = graph @b(%i: i64[], %cond: bool[], %v: f32[2]) -> (%cond: bool[], %w: f32[?]) {
    %w = Concat(%v, %v) {axis = 0}
    return %cond, %w
  }
  return %v
}
)");
  const Value *v = g->findValue("v");
  ASSERT_TRUE(v->shape().isRanked());
  EXPECT_TRUE(v->shape()[0].isUnknown()) << v->type().str();
  auto out = evaluateGraph(
      *g, {{"m", Tensor::scalar<int64_t>(3)}, {"v0", Tensor::fromVector<float>({2}, {1, 2})}})[0];
  EXPECT_EQ(out.dims(), (std::vector<int64_t>{16}));
}

TEST(ControlFlow, ScanSlicesAndStacksInBothDirections) {
  auto g = parsed(R"(
graph @g(%s0: f32[2], %rows: f32[3, 2], %cols: f32[2, 3]) -> (%s: f32[2], %out: f32[2, 3]) {
  %s, %out = Scan(%s0, %rows, %cols) {num_scan_inputs = 2, scan_input_axes = [0, 1], scan_input_directions = [0, 1], scan_output_axes = [1], scan_output_directions = [1]} body = graph @b(%sum: f32[2], %row: f32[2], %col: f32[2]) -> (%next: f32[2], %emit: f32[2]) {
    %next = Add(%sum, %row)
    %emit = Mul(%col, %next)
    return %next, %emit
  }
  return %s, %out
}
)");
  EXPECT_EQ(g->findValue("out")->type().str(), "f32[2, 3]");
  std::vector<float> rows{1, 2, 3, 4, 5, 6}, cols{1, 2, 3, 4, 5, 6};
  // Step t reads row t and column 2 - t; output t lands at column 2 - t.
  std::vector<double> sum{0, 0}, out(6);
  for (int t = 0; t < 3; ++t) {
    for (int j = 0; j < 2; ++j)
      sum[size_t(j)] += rows[size_t(t * 2 + j)];
    for (int j = 0; j < 2; ++j)
      out[size_t(j * 3 + (2 - t))] = cols[size_t(j * 3 + (2 - t))] * sum[size_t(j)];
  }
  auto outputs = evaluateGraph(*g, {{"s0", Tensor::fromVector<float>({2}, {0, 0})},
                                    {"rows", Tensor::fromVector<float>({3, 2}, rows)},
                                    {"cols", Tensor::fromVector<float>({2, 3}, cols)}});
  expectNear(outputs[0], sum);
  expectNear(outputs[1], out);
}

TEST(ControlFlow, VerifierAndParserRefuseBrokenRegions) {
  EXPECT_NE(errorOf([] {
              verifyGraph(*parseGraph(R"(
graph @g(%c: bool[], %x: f32[2]) -> (%r: f32[2]) {
  %r = If(%c, %x) then_branch = graph @t(%x: i64[2]) -> (%x: i64[2]) {
    return %x
  } else_branch = graph @e(%x: f32[2]) -> (%x: f32[2]) {
    return %x
  }
  return %r
}
)"));
            }).find("then_branch input 0 '%x' is i64 but the capture '%x' is f32"),
            std::string::npos);
  // Regions nested past the parser's limit are refused, not a stack overflow.
  std::string deep = "graph @g(%c: bool[]) -> (%c: bool[]) {\n";
  for (int i = 0; i < 70; ++i)
    deep += "%r" + std::to_string(i) + " = If(%c, %c) then_branch = graph @t(%c: bool[]) -> () {\n";
  EXPECT_NE(errorOf([&] { parseGraph(deep); }).find("regions nest deeper than 64"),
            std::string::npos);
}

TEST(ControlFlow, PrintParsePrintIsIdentical) {
  auto g = parsed(kIfGraph);
  std::string once = printGraphToString(*g);
  EXPECT_EQ(printGraphToString(*parseGraph(once)), once);
}
