//===- tests/unit/passes/PassSimplifyCastsTest.cpp - The simplify-casts pass -----===//
#include "TestUtil.h"

#include "ir/Graph.h"
#include "ir/eval/Broadcast.h"
#include "passes/Pass.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

// ONNX TensorProto.DataType codes used below.
constexpr int64_t kFloat = 1, kInt32 = 6, kInt64 = 7, kFloat16 = 10, kDouble = 11, kBool = 9;

Node *cast(Graph &g, Value *x, int64_t to, const std::string &name) {
  Node *node = g.createNode(OpKind::Cast, {x}, 1, name, {name + ".out"});
  node->setAttr("to", Attribute(to));
  node->result(0)->setType({*dtypeFromOnnxCode(to), x->shape()});
  return node;
}

bool runPass(Graph &g, PassContext &context) { return createSimplifyCastsPass()->run(g, context); }

} // namespace

TEST(PassSimplifyCasts, RemovesCastToTheSameType) {
  // HF GPT-2: softmax(...).type(value.dtype) on an f32 graph.
  Graph g;
  Value *x = g.addInput("x", f32({2, 3}));
  Node *same = cast(g, x, kFloat, "same");
  Node *relu = g.createNode(OpKind::Relu, {same->result()}, 1, "relu", {"y"});
  g.addOutput("y", relu->result());
  PassContext context("simplify-casts");
  EXPECT_TRUE(runPass(g, context));
  EXPECT_EQ(countKind(g, OpKind::Cast), 0u);
  EXPECT_EQ(relu->operand(0), x);
  EXPECT_EQ(context.counter("removed"), 1);
}

TEST(PassSimplifyCasts, RemovesExactRoundTripsOnly) {
  Graph g;
  Value *x = g.addInput("x", f32({4}));
  Value *i = g.addInput("i", {DType::I32, Shape({Dim(4)})});
  // f32 -> f64 -> f32 and i32 -> i64 -> i32 give back every value.
  Node *wide = cast(g, cast(g, x, kDouble, "to_f64")->result(), kFloat, "back_f32");
  Node *wideInt = cast(g, cast(g, i, kInt64, "to_i64")->result(), kInt32, "back_i32");
  // f32 -> f16 -> f32 rounds, i32 -> f32 -> i32 rounds above 2^24: both stay.
  Node *narrow = cast(g, cast(g, x, kFloat16, "to_f16")->result(), kFloat, "back_from_f16");
  Node *viaFloat = cast(g, cast(g, i, kFloat, "i_to_f32")->result(), kInt32, "back_from_f32");
  for (Node *n : {wide, wideInt, narrow, viaFloat})
    g.addOutput(n->name() + ".y", n->result());
  PassContext context("simplify-casts");
  EXPECT_TRUE(runPass(g, context));
  EXPECT_EQ(g.outputs()[0].value, x);
  EXPECT_EQ(g.outputs()[1].value, i);
  EXPECT_EQ(g.outputs()[2].value, narrow->result());
  EXPECT_EQ(g.outputs()[3].value, viaFloat->result());
  EXPECT_EQ(context.counter("removed"), 2);
}

TEST(PassSimplifyCasts, RoundTripTable) {
  EXPECT_TRUE(castRoundTripsExactly(DType::F16, DType::F32));
  EXPECT_TRUE(castRoundTripsExactly(DType::BF16, DType::F32));
  EXPECT_TRUE(castRoundTripsExactly(DType::F32, DType::F64));
  EXPECT_TRUE(castRoundTripsExactly(DType::I16, DType::F32));
  EXPECT_TRUE(castRoundTripsExactly(DType::U8, DType::I16));
  EXPECT_TRUE(castRoundTripsExactly(DType::Bool, DType::F16));
  EXPECT_TRUE(castRoundTripsExactly(DType::I32, DType::F64));
  EXPECT_FALSE(castRoundTripsExactly(DType::F32, DType::F16));
  EXPECT_FALSE(castRoundTripsExactly(DType::F16, DType::BF16));
  EXPECT_FALSE(castRoundTripsExactly(DType::F32, DType::I64));
  EXPECT_FALSE(castRoundTripsExactly(DType::I32, DType::F32));
  EXPECT_FALSE(castRoundTripsExactly(DType::I64, DType::F64));
  EXPECT_FALSE(castRoundTripsExactly(DType::I8, DType::U64));
  EXPECT_FALSE(castRoundTripsExactly(DType::U8, DType::I8));
  EXPECT_FALSE(castRoundTripsExactly(DType::I32, DType::Bool));
  (void)kBool;
}

TEST(PassSimplifyCasts, OutputsUnchanged) {
  // The removed casts change no value: the reference evaluator agrees.
  auto build = [] {
    auto g = std::make_unique<Graph>("casts");
    Value *x = g->addInput("x", f32({5}));
    Node *a = cast(*g, x, kFloat, "same");
    Node *b = cast(*g, cast(*g, a->result(), kDouble, "wide")->result(), kFloat, "back");
    Node *c = cast(*g, cast(*g, b->result(), kFloat16, "half")->result(), kFloat, "from_half");
    g->addOutput("y", c->result());
    return g;
  };
  auto reference = build();
  auto g = build();
  PassContext context("simplify-casts");
  runPass(*g, context);
  EXPECT_EQ(countKind(*g, OpKind::Cast), 2u);
  Tensor input = Tensor::fromVector<float>({5}, {1.0f, 1e-8f, 3.14159265f, -65504.0f, 1e6f});
  expectSameOutputs(*reference, *g, {{"x", input}});
}
