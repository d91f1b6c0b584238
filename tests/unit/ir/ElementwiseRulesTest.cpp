//===- tests/unit/ir/ElementwiseRulesTest.cpp - Elementwise shape rules ------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/infer/ShapeInference.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

/// Builds `kind(a, b, ...)` on graph inputs of the given types and infers it.
TensorType inferOne(OpKind kind, const std::vector<TensorType> &operandTypes,
                    const AttributeMap &attrs = {}) {
  Graph g;
  std::vector<Value *> operands;
  for (size_t i = 0; i < operandTypes.size(); ++i)
    operands.push_back(g.addInput("in" + std::to_string(i), operandTypes[i]));
  Node *node = g.createNode(kind, operands, 1, "n");
  for (const auto &[name, value] : attrs)
    node->setAttr(name, value);
  g.addOutput("out", node->result());
  inferShapes(g);
  return node->result()->type();
}

} // namespace

TEST(ElementwiseRules, SymbolicBroadcast) {
  TensorType y = inferOne(
      OpKind::Add, {type(DType::F32, {sym("batch"), sym("seq"), 64}), type(DType::F32, {64})});
  EXPECT_EQ(y.str(), "f32[batch, seq, 64]");
  TensorType mask =
      inferOne(OpKind::Add, {type(DType::F32, {sym("batch"), 1, 1, sym("seq")}),
                             type(DType::F32, {sym("batch"), 4, sym("seq"), sym("seq")})});
  EXPECT_EQ(mask.str(), "f32[batch, 4, seq, seq]");
  TensorType constantWins =
      inferOne(OpKind::Mul, {type(DType::F32, {sym("n")}), type(DType::F32, {8})});
  EXPECT_EQ(constantWins.str(), "f32[8]");
  // Two input symbols are unified (InferenceContext::unify): the first
  // operand's is kept, and the inputs are checked equal at run time, rather
  // than a fresh symbol nothing binds. (ShapeInferenceTest covers the
  // fresh-symbol case of symbols a rule made up.)
  TensorType unified =
      inferOne(OpKind::Sub, {type(DType::F32, {sym("n")}), type(DType::F32, {sym("m")})});
  EXPECT_EQ(unified.str(), "f32[n]");
  TensorType unranked =
      inferOne(OpKind::Add, {TensorType{DType::F32, Shape()}, type(DType::F32, {3})});
  EXPECT_FALSE(unranked.shape.isRanked());
}

TEST(ElementwiseRules, BroadcastErrorsNameNodeAndShapes) {
  try {
    inferOne(OpKind::Add, {type(DType::F32, {3}), type(DType::F32, {4})});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("node 'n'"), std::string::npos) << message;
    EXPECT_NE(message.find("[3]"), std::string::npos) << message;
    EXPECT_NE(message.find("[4]"), std::string::npos) << message;
  }
  EXPECT_THROW(inferOne(OpKind::Add, {type(DType::F32, {3}), type(DType::I64, {3})}), Error);
}

TEST(ElementwiseRules, DTypes) {
  EXPECT_EQ(inferOne(OpKind::Less, {type(DType::I64, {2}), type(DType::I64, {1})}).str(),
            "bool[2]");
  EXPECT_EQ(inferOne(OpKind::Pow, {type(DType::F16, {2}), type(DType::I64, {})}).str(), "f16[2]");
  EXPECT_EQ(inferOne(OpKind::Cast, {type(DType::F32, {sym("n")})}, {{"to", 7}}).str(), "i64[n]");
  EXPECT_EQ(inferOne(OpKind::CastLike, {type(DType::F32, {2}), type(DType::BF16, {})}).str(),
            "bf16[2]");
  EXPECT_EQ(inferOne(OpKind::IsNaN, {type(DType::F32, {2})}).str(), "bool[2]");
  EXPECT_EQ(inferOne(OpKind::Where,
                     {type(DType::Bool, {2, 1}), type(DType::I32, {3}), type(DType::I32, {})})
                .str(),
            "i32[2, 3]");
  EXPECT_THROW(inferOne(OpKind::Where,
                        {type(DType::F32, {2}), type(DType::F32, {2}), type(DType::F32, {2})}),
               Error);
  EXPECT_THROW(inferOne(OpKind::Sqrt, {type(DType::I64, {2})}), Error);
  EXPECT_THROW(inferOne(OpKind::Cast, {type(DType::F32, {2})}, {{"to", 8}}), Error);
}

TEST(ElementwiseRules, Reductions) {
  Graph g;
  Value *x = g.addInput("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *last = g.addConstant("last", Tensor::fromVector<int64_t>({1}, {-1}));
  Value *unknownAxes = g.addInput("axes", type(DType::I64, {1}));
  Node *kept = g.createNode(OpKind::ReduceMean, {x, last}, 1, "kept");
  Node *dropped = g.createNode(OpKind::ReduceSum, {x, last}, 1, "dropped");
  dropped->setAttr("keepdims", 0);
  Node *all = g.createNode(OpKind::ReduceMax, {x}, 1, "all");
  all->setAttr("keepdims", 0);
  Node *dynamicKept = g.createNode(OpKind::ReduceMean, {x, unknownAxes}, 1, "dk");
  Node *dynamicDropped = g.createNode(OpKind::ReduceMean, {x, unknownAxes}, 1, "dd");
  dynamicDropped->setAttr("keepdims", 0);
  Node *arg = g.createNode(OpKind::ArgMax, {x}, 1, "arg");
  arg->setAttr("axis", 1);
  arg->setAttr("keepdims", 0);
  inferShapes(g);
  EXPECT_EQ(kept->result()->type().str(), "f32[batch, seq, 1]");
  EXPECT_EQ(dropped->result()->type().str(), "f32[batch, seq]");
  EXPECT_EQ(all->result()->type().str(), "f32[]");
  EXPECT_EQ(dynamicKept->result()->shape().rank(), 3u);
  EXPECT_FALSE(dynamicDropped->result()->shape().isRanked());
  EXPECT_EQ(arg->result()->type().str(), "i64[batch, 64]");
}

TEST(ElementwiseRules, NormalizationStatistics) {
  Graph g;
  Value *x = g.addInput("x", type(DType::F16, {sym("batch"), sym("seq"), 64}));
  Value *scale = g.addInput("scale", type(DType::F16, {64}));
  Node *ln = g.createNode(OpKind::LayerNormalization, {x, scale}, 3, "ln");
  Node *ln2 = g.createNode(OpKind::LayerNormalization, {x, scale}, 2, "ln2");
  ln2->setAttr("axis", 1);
  ln2->setAttr("stash_type", 11);
  Node *softmax = g.createNode(OpKind::Softmax, {x}, 1, "softmax");
  inferShapes(g);
  EXPECT_EQ(ln->result(0)->type().str(), "f16[batch, seq, 64]");
  EXPECT_EQ(ln->result(1)->type().str(), "f32[batch, seq, 1]");
  EXPECT_EQ(ln->result(2)->type().str(), "f32[batch, seq, 1]");
  EXPECT_EQ(ln2->result(1)->type().str(), "f64[batch, 1, 1]");
  EXPECT_EQ(softmax->result()->type().str(), "f16[batch, seq, 64]");
}
