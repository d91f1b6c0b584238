//===- tests/unit/ir/ShapeInferenceTest.cpp - Driver, contents, movement rules -===//
//
// The shape chains exported transformer models use to compute dynamic
// shapes, built by hand with the Graph API and run through inferShapes.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/ShapeInference.h"

#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/infer/KnownContents.h"

#include <gtest/gtest.h>

#include <climits>

using namespace onnxc;
using namespace onnxc::test;

namespace {

/// Builds graphs with short calls; values are named by the graph.
class Builder {
public:
  Graph graph;

  Value *input(const std::string &name, TensorType t) { return graph.addInput(name, t); }
  Value *ints(std::vector<int64_t> values, bool scalar = false) {
    std::vector<int64_t> dims;
    if (!scalar)
      dims.push_back(int64_t(values.size()));
    return graph.addConstant(graph.uniqueName("c"), Tensor::fromVector<int64_t>(dims, values));
  }
  Value *op(OpKind kind, std::vector<Value *> operands, AttributeMap attrs = {},
            unsigned results = 1) {
    Node *node = graph.createNode(kind, operands, results);
    for (auto &[name, value] : attrs)
      node->setAttr(name, value);
    return node->result(0);
  }
  /// Gather(Shape(x), index) as a 1-element vector, the way exporters write it.
  Value *dimOf(Value *x, int64_t index) {
    Value *gathered = op(OpKind::Gather, {op(OpKind::Shape, {x}), ints({index}, true)});
    return op(OpKind::Unsqueeze, {gathered, ints({0})});
  }
};

std::string typeOf(const Value *v) { return v->type().str(); }

TEST(ShapeInference, ExportedReshapeChainResolvesSymbolically) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *target =
      b.op(OpKind::Concat, {b.dimOf(x, 0), b.dimOf(x, 1), b.ints({4, 16})}, {{"axis", int64_t(0)}});
  Value *reshaped = b.op(OpKind::Reshape, {x, target});
  InferenceContext context = inferShapes(b.graph);
  EXPECT_EQ(typeOf(target), "i64[4]");
  ASSERT_NE(context.knownContents(target), nullptr);
  EXPECT_EQ(Shape(*context.knownContents(target)).str(), "[batch, seq, 4, 16]");
  EXPECT_EQ(typeOf(reshaped), "f32[batch, seq, 4, 16]");
}

TEST(ShapeInference, ReshapeZeroCopiesAndMinusOneDividesSymbolically) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *split = b.op(OpKind::Reshape, {x, b.ints({0, 0, 4, -1})});
  Value *merged = b.op(OpKind::Reshape, {split, b.ints({0, 0, -1})});
  Value *flat = b.op(OpKind::Reshape, {x, b.ints({-1, 64})});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(split), "f32[batch, seq, 4, 16]");
  EXPECT_EQ(typeOf(merged), "f32[batch, seq, 64]");
  EXPECT_EQ(typeOf(flat), "f32[batch*seq, 64]");
}

TEST(ShapeInference, ReshapeNotDivisibleGetsFreshSymbol) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("seq"), 3}));
  Value *r = b.op(OpKind::Reshape, {x, b.ints({2, -1})});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(r), "f32[2, reshape]");
}

TEST(ShapeInference, FreshSymbolsSkipNamesInUseAndStayLinear) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("reshape_2"), sym("s")}));
  // A target read from an input has unknown contents: 64 fresh symbols,
  // all from one hint.
  Value *target = b.input("target", type(DType::I64, {64}));
  Value *r = b.op(OpKind::Reshape, {x, target});
  inferShapes(b.graph);
  ASSERT_EQ(r->shape().rank(), 64u);
  EXPECT_EQ(r->shape()[0].str(), "reshape");
  EXPECT_EQ(r->shape()[1].str(), "reshape_1");
  EXPECT_EQ(r->shape()[2].str(), "reshape_3"); // reshape_2 names an input dim
  EXPECT_EQ(r->shape()[63].str(), "reshape_64");
}

TEST(ShapeInference, RankFromAHugeLengthIsAnError) {
  // ConstantOfShape([2^40]) has unknown contents, so a Reshape to it or an
  // Unsqueeze by it would have rank 2^40.
  for (OpKind kind : {OpKind::Reshape, OpKind::Unsqueeze, OpKind::ConstantOfShape}) {
    Builder b;
    Value *x = b.input("x", type(DType::F32, {1}));
    Value *lengths = b.op(OpKind::ConstantOfShape, {b.ints({int64_t(1) << 40})},
                          {{"value", Tensor::fromVector<int64_t>({1}, {1})}});
    if (kind == OpKind::ConstantOfShape)
      b.graph.createNode(kind, {lengths}, 1, "huge");
    else
      b.graph.createNode(kind, {x, lengths}, 1, "huge");
    std::string error = errorOf([&] { inferShapes(b.graph); });
    EXPECT_NE(error.find("node 'huge': "), std::string::npos) << error;
    std::string rank = kind == OpKind::Unsqueeze ? "1099511627777" : "1099511627776";
    EXPECT_NE(error.find("1099511627776 elements, so the result would have rank " + rank +
                         "; onnxc supports ranks up to 64"),
              std::string::npos)
        << error;
  }
}

// The Conv rule once wrapped: "kernel extent 3 exceeds padded input size
// -9223372036854775803" for pads [INT64_MAX, 1] on a length-4 input.
TEST(ShapeInference, ConvPaddingOverflowNamesTheNodeWithoutWrapping) {
  for (std::vector<int64_t> pads :
       {std::vector<int64_t>{INT64_MAX, 1}, std::vector<int64_t>{INT64_MAX, INT64_MAX}}) {
    Builder b;
    Value *x = b.input("x", type(DType::F32, {1, 1, 4}));
    Value *w = b.graph.addConstant("w", Tensor::fromVector<float>({1, 1, 3}, {1, 1, 1}));
    Node *conv = b.graph.createNode(OpKind::Conv, {x, w}, 1, "conv_pads");
    conv->setAttr("pads", pads);
    std::string error = errorOf([&] { inferShapes(b.graph); });
    EXPECT_NE(error.find("node 'conv_pads'"), std::string::npos) << error;
    EXPECT_NE(error.find("overflows int64"), std::string::npos) << error;
    EXPECT_EQ(error.find("-9223372036854775"), std::string::npos) << error;
  }
}

TEST(ShapeInference, ImpossibleReshapeIsAnError) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {2, 3, 64}));
  Node *n = b.graph.createNode(OpKind::Reshape, {x, b.ints({2, 100})}, 1, "attn/Reshape_3");
  (void)n;
  try {
    inferShapes(b.graph);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(),
                 "node 'attn/Reshape_3': reshape of 384 elements to [2, 100] is impossible");
  }
}

TEST(ShapeInference, TransposePermMustBeAPermutation) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  b.op(OpKind::Transpose, {x}, {{"perm", std::vector<int64_t>{0, 0, 1}}});
  EXPECT_THROW(inferShapes(b.graph), Error);

  Builder ok;
  Value *y = ok.input("y", type(DType::F32, {sym("batch"), sym("seq"), 4, 16}));
  Value *t = ok.op(OpKind::Transpose, {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  Value *reversed = ok.op(OpKind::Transpose, {y});
  inferShapes(ok.graph);
  EXPECT_EQ(typeOf(t), "f32[batch, 4, seq, 16]");
  EXPECT_EQ(typeOf(reversed), "f32[16, 4, seq, batch]");
}

TEST(ShapeInference, RangeOverSequenceLength) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *seq = b.op(OpKind::Gather, {b.op(OpKind::Shape, {x}), b.ints({1}, true)});
  Value *positions = b.op(OpKind::Range, {b.ints({0}, true), seq, b.ints({1}, true)});
  Value *fixed = b.op(OpKind::Range, {b.ints({10}, true), b.ints({0}, true), b.ints({-3}, true)});
  InferenceContext context = inferShapes(b.graph);
  EXPECT_EQ(typeOf(seq), "i64[]");
  EXPECT_EQ(typeOf(positions), "i64[seq]");
  EXPECT_EQ(typeOf(fixed), "i64[4]");
  ASSERT_NE(context.knownContents(fixed), nullptr);
  EXPECT_EQ(Shape(*context.knownContents(fixed)).str(), "[10, 7, 4, 1]");
}

TEST(ShapeInference, ConstantOfShapeOfInputShape) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *zeros = b.op(OpKind::ConstantOfShape, {b.op(OpKind::Shape, {x})});
  Value *ones = b.op(OpKind::ConstantOfShape, {b.ints({3})},
                     {{"value", Tensor::fromVector<int64_t>({1}, {1})}});
  InferenceContext context = inferShapes(b.graph);
  EXPECT_EQ(typeOf(zeros), "f32[batch, seq, 64]");
  EXPECT_EQ(typeOf(ones), "i64[3]");
  ASSERT_NE(context.knownContents(ones), nullptr);
  EXPECT_EQ(Shape(*context.knownContents(ones)).str(), "[1, 1, 1]");
}

TEST(ShapeInference, ExpandCausalMaskToBatch) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *mask = b.input("mask", type(DType::Bool, {1, 1, sym("seq"), sym("seq")}));
  Value *target = b.op(OpKind::Concat, {b.dimOf(x, 0), b.ints({1}), b.dimOf(x, 1), b.dimOf(x, 1)},
                       {{"axis", int64_t(0)}});
  Value *expanded = b.op(OpKind::Expand, {mask, target});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(expanded), "bool[batch, 1, seq, seq]");
}

TEST(ShapeInference, SliceConstantTriangleBySequenceLength) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *triangle = b.graph.addConstant("bias", Tensor::elided(DType::U8, {1, 1, 512, 512}));
  Value *ends = b.op(OpKind::Concat, {b.dimOf(x, 1), b.dimOf(x, 1)}, {{"axis", int64_t(0)}});
  Value *sliced = b.op(OpKind::Slice, {triangle, b.ints({0, 0}), ends, b.ints({2, 3})});
  Value *tail = b.op(OpKind::Slice, {x, b.ints({1}), b.ints({INT64_MAX}), b.ints({1})});
  Value *last = b.op(OpKind::Slice, {x, b.ints({-1}), b.ints({INT64_MAX}), b.ints({1})});
  Value *dropLast = b.op(OpKind::Slice, {x, b.ints({0}), b.ints({-1}), b.ints({1})});
  Value *reversed =
      b.op(OpKind::Slice, {x, b.ints({-1}), b.ints({INT64_MIN}), b.ints({2}), b.ints({-3})});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(sliced), "u8[1, 1, seq, seq]");
  EXPECT_EQ(typeOf(tail), "f32[batch, seq-1, 64]");
  EXPECT_EQ(typeOf(last), "f32[batch, 1, 64]");
  EXPECT_EQ(typeOf(dropLast), "f32[batch, seq-1, 64]");
  EXPECT_EQ(typeOf(reversed), "f32[batch, seq, 22]");
}

TEST(ShapeInference, SliceWithUnknownBoundsGetsFreshSymbols) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), 8}));
  Value *starts = b.input("starts", type(DType::I64, {1}));
  Value *sliced = b.op(OpKind::Slice, {x, starts, b.ints({8}), b.ints({1})});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(sliced), "f32[batch, slice]");
}

TEST(ShapeInference, SplitForms) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), 10, sym("seq") * Dim(2)}));
  Node *byAttr = b.graph.createNode(OpKind::Split, {x}, 3);
  byAttr->setAttr("axis", int64_t(1));
  byAttr->setAttr("num_outputs", int64_t(3));
  Node *bySizes = b.graph.createNode(OpKind::Split, {x, b.ints({3, 7})}, 2);
  bySizes->setAttr("axis", int64_t(1));
  Node *equal = b.graph.createNode(OpKind::Split, {x}, 2);
  equal->setAttr("axis", int64_t(-1));
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(byAttr->result(0)), "f32[batch, 4, seq*2]");
  EXPECT_EQ(typeOf(byAttr->result(2)), "f32[batch, 2, seq*2]");
  EXPECT_EQ(typeOf(bySizes->result(1)), "f32[batch, 7, seq*2]");
  EXPECT_EQ(typeOf(equal->result(1)), "f32[batch, 10, seq]");

  Builder bad;
  Value *y = bad.input("y", type(DType::F32, {10}));
  bad.graph.createNode(OpKind::Split, {y, bad.ints({3, 3})}, 2);
  EXPECT_THROW(inferShapes(bad.graph), Error);
}

TEST(ShapeInference, GatherSqueezeUnsqueezeFlattenTile) {
  Builder b;
  Value *emb = b.input("emb", type(DType::F32, {100, 64}));
  Value *ids = b.input("ids", type(DType::I64, {sym("batch"), sym("seq")}));
  Value *gathered = b.op(OpKind::Gather, {emb, ids});
  Value *unsqueezed = b.op(OpKind::Unsqueeze, {ids, b.ints({1, -1})});
  Value *squeezed = b.op(OpKind::Squeeze, {unsqueezed, b.ints({1})});
  Value *squeezedAll = b.op(OpKind::Squeeze, {unsqueezed});
  Value *flat = b.op(OpKind::Flatten, {gathered}, {{"axis", int64_t(2)}});
  Value *tiled = b.op(OpKind::Tile, {ids, b.ints({2, 1})});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(gathered), "f32[batch, seq, 64]");
  EXPECT_EQ(typeOf(unsqueezed), "i64[batch, 1, seq, 1]");
  EXPECT_EQ(typeOf(squeezed), "i64[batch, seq, 1]");
  EXPECT_EQ(typeOf(squeezedAll), "i64[batch, seq]");
  EXPECT_EQ(typeOf(flat), "f32[batch*seq, 64]");
  EXPECT_EQ(typeOf(tiled), "i64[batch*2, seq]");

  Builder bad;
  Value *data = bad.input("data", type(DType::F32, {5, 2}));
  bad.op(OpKind::Gather, {data, bad.ints({5})});
  EXPECT_THROW(inferShapes(bad.graph), Error);
}

TEST(ShapeInference, ShapeStartEndAndConstantNodes) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 4, 16}));
  Value *middle = b.op(OpKind::Shape, {x}, {{"start", int64_t(1)}, {"end", int64_t(-1)}});
  Value *size = b.op(OpKind::Size, {x});
  Value *c = b.op(OpKind::Constant, {}, {{"value_ints", std::vector<int64_t>{2, 3}}});
  Value *f = b.op(OpKind::Constant, {}, {{"value_float", 1.5f}});
  InferenceContext context = inferShapes(b.graph);
  EXPECT_EQ(typeOf(middle), "i64[2]");
  EXPECT_EQ(Shape(*context.knownContents(middle)).str(), "[seq, 4]");
  EXPECT_EQ(Shape(*context.knownContents(size)).str(), "[batch*seq*64]");
  EXPECT_EQ(typeOf(c), "i64[2]");
  EXPECT_EQ(typeOf(f), "f32[]");
}

TEST(ShapeInference, ConcatSumsSymbolicallyAndChecksOtherDims) {
  Builder b;
  Value *past = b.input("past", type(DType::F32, {sym("batch"), sym("past"), 64}));
  Value *now = b.input("now", type(DType::F32, {sym("batch"), sym("seq"), 64}));
  Value *all = b.op(OpKind::Concat, {past, now}, {{"axis", int64_t(1)}});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(all), "f32[batch, past+seq, 64]");

  Builder bad;
  Value *a = bad.input("a", type(DType::F32, {2, 3}));
  Value *c = bad.input("c", type(DType::F32, {4, 3}));
  bad.op(OpKind::Concat, {a, c}, {{"axis", int64_t(1)}});
  EXPECT_THROW(inferShapes(bad.graph), Error);
}

// A KV-cache decoder's mask has a length of its own (`mask_len`) that meets
// the keys' past+seq in the broadcast: the symbol is replaced by past+seq in
// the whole graph (input type, earlier results, known contents), instead of
// the scores getting a fresh symbol nothing at run time binds.
TEST(ShapeInference, BroadcastUnifiesAnInputSymbolWithADerivedLength) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 8}));
  Value *past = b.input("past", type(DType::F32, {sym("batch"), sym("past"), 8}));
  Value *mask = b.input("mask", type(DType::F32, {sym("batch"), sym("mask_len")}));
  Value *maskShape = b.op(OpKind::Shape, {mask});
  Value *mask3 = b.op(OpKind::Unsqueeze, {mask, b.ints({1})});
  Value *keys = b.op(OpKind::Concat, {past, x}, {{"axis", int64_t(1)}});
  Value *keysT = b.op(OpKind::Transpose, {keys}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Value *scores = b.op(OpKind::MatMul, {x, keysT});
  Value *masked = b.op(OpKind::Add, {scores, mask3});
  // A second use of the mask after the unification sees past+seq directly.
  Value *again = b.op(OpKind::Add, {masked, mask3});
  InferenceContext context = inferShapes(b.graph);
  EXPECT_EQ(typeOf(masked), "f32[batch, seq, past+seq]");
  EXPECT_EQ(typeOf(again), "f32[batch, seq, past+seq]");
  EXPECT_EQ(typeOf(mask), "f32[batch, past+seq]");
  EXPECT_EQ(typeOf(mask3), "f32[batch, 1, past+seq]");
  ASSERT_NE(context.knownContents(maskShape), nullptr);
  EXPECT_EQ(Shape(*context.knownContents(maskShape)).str(), "[batch, past+seq]");
  EXPECT_EQ(context.resolve(sym("mask_len")).str(), "past+seq");
  EXPECT_TRUE(b.graph.assumptions().empty());
}

// Two dims a rule made up (a Range over input contents) cannot be unified:
// nothing binds them, so the broadcast keeps a fresh symbol as before.
TEST(ShapeInference, BroadcastOfMadeUpSymbolsStaysFresh) {
  Builder b;
  Value *limit = b.input("limit", type(DType::I64, {}));
  Value *other = b.input("other", type(DType::I64, {}));
  Value *r1 = b.op(OpKind::Range, {b.ints({0}, true), limit, b.ints({1}, true)});
  Value *r2 = b.op(OpKind::Range, {b.ints({0}, true), other, b.ints({1}, true)});
  Value *sum = b.op(OpKind::Add, {r1, r2});
  inferShapes(b.graph);
  EXPECT_EQ(typeOf(sum), "i64[b]");
}

TEST(ShapeInference, FreshSymbolsAvoidExistingNames) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("range")}));
  Value *limit = b.input("limit", type(DType::I64, {}));
  Value *r = b.op(OpKind::Range, {b.ints({0}, true), limit, b.ints({2}, true)});
  (void)x;
  InferenceContext context = inferShapes(b.graph);
  EXPECT_EQ(typeOf(r), "i64[range_1]");
  EXPECT_EQ(context.freshSymbol("range").str(), "range_2");
}

TEST(ShapeInference, UnknownOperandDTypeIsAnError) {
  Builder b;
  Value *x = b.input("x", TensorType{});
  b.graph.createNode(OpKind::Identity, {x}, 1, "id");
  try {
    inferShapes(b.graph);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("node 'id'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'%x'"), std::string::npos) << e.what();
  }
}

// Contents propagation through elementwise ops, checked without their
// rules: result types are set by hand, as the rule would.
void propagate(Value *result, InferenceContext &context) {
  for (const Value *operand : result->definingNode()->operands())
    if (operand->isConstant() && !context.knownContents(operand))
      if (std::optional<std::vector<Dim>> contents = contentsOfTensor(operand->constantValue()))
        context.setKnownContents(operand, *contents);
  propagateKnownContents(*result->definingNode(), context);
}

TEST(KnownContents, TorchExpandPatternResolvesMinusOne) {
  Builder b;
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq")}));
  InferenceContext context(b.graph);
  Value *shape = b.op(OpKind::Shape, {x});
  Node *shapeNode = shape->definingNode();
  inferNodeShapes(*shapeNode, context);
  Value *minusOne = b.ints({-1}, true);
  Value *ones = b.ints({1, 1});
  Value *isMinusOne = b.op(OpKind::Equal, {shape, minusOne});
  isMinusOne->setType(type(DType::Bool, {2}));
  propagate(isMinusOne, context);
  Value *chosen = b.op(OpKind::Where, {isMinusOne, ones, shape});
  chosen->setType(type(DType::I64, {2}));
  propagate(chosen, context);
  ASSERT_NE(context.knownContents(isMinusOne), nullptr);
  EXPECT_EQ(Shape(*context.knownContents(isMinusOne)).str(), "[0, 0]");
  ASSERT_NE(context.knownContents(chosen), nullptr);
  EXPECT_EQ(Shape(*context.knownContents(chosen)).str(), "[batch, seq]");
}

TEST(KnownContents, ArithmeticAndCast) {
  Builder b;
  InferenceContext context(b.graph);
  Value *x = b.input("x", type(DType::F32, {sym("batch"), sym("seq"), 768}));
  Value *shape = b.op(OpKind::Shape, {x});
  inferNodeShapes(*shape->definingNode(), context);
  auto run = [&](OpKind kind, std::vector<Value *> operands, TensorType t) {
    Value *v = b.op(kind, operands);
    v->setType(t);
    propagate(v, context);
    const std::vector<Dim> *contents = context.knownContents(v);
    return contents ? Shape(*contents).str() : std::string("none");
  };
  EXPECT_EQ(run(OpKind::Mul, {shape, b.ints({2, 1, 1})}, type(DType::I64, {3})),
            "[batch*2, seq, 768]");
  EXPECT_EQ(run(OpKind::Div, {shape, b.ints({12}, true)}, type(DType::I64, {3})), "[?, ?, 64]");
  EXPECT_EQ(run(OpKind::Sub, {shape, b.ints({1})}, type(DType::I64, {3})), "[batch-1, seq-1, 767]");
  EXPECT_EQ(run(OpKind::Cast, {shape}, type(DType::I32, {3})), "[batch, seq, 768]");
  Value *floats = b.graph.addConstant("f", Tensor::fromVector<float>({2}, {2.7f, -1.5f}));
  EXPECT_EQ(run(OpKind::Cast, {floats}, type(DType::I64, {2})), "[2, -1]");
  EXPECT_EQ(run(OpKind::Max, {b.ints({3, 9}), b.ints({5}, true)}, type(DType::I64, {2})), "[5, 9]");
  EXPECT_EQ(run(OpKind::Neg, {shape}, type(DType::I64, {3})), "[-batch, -seq, -768]");
  // Gather with a negative index and Slice of a shape.
  Value *lastDim = b.op(OpKind::Gather, {shape, b.ints({-1}, true)});
  inferNodeShapes(*lastDim->definingNode(), context);
  EXPECT_EQ(Shape(*context.knownContents(lastDim)).str(), "[768]");
  Value *head = b.op(OpKind::Slice, {shape, b.ints({0}), b.ints({-1})});
  inferNodeShapes(*head->definingNode(), context);
  EXPECT_EQ(Shape(*context.knownContents(head)).str(), "[batch, seq]");
}

TEST(KnownContents, SliceBoundsFollowOnnx) {
  auto length = [](int64_t s, int64_t e, int64_t step, int64_t d) {
    return resolveSliceBounds(s, e, step, d).length;
  };
  EXPECT_EQ(length(0, INT64_MAX, 1, 5), 5);
  EXPECT_EQ(length(-2, INT64_MAX, 1, 5), 2);
  EXPECT_EQ(length(-1, INT64_MIN, -1, 5), 5);
  EXPECT_EQ(length(20, 0, -2, 5), 2); // 4, 2
  EXPECT_EQ(length(3, 1, 1, 5), 0);
  EXPECT_EQ(length(0, 5, INT64_MAX, 5), 1);
  EXPECT_EQ(length(0, -1, -1, 0), 0);
  EXPECT_EQ(resolveSliceBounds(20, 0, -2, 5).start, 4);
}

} // namespace
