//===- tests/unit/ir/ScatterGatherRulesTest.cpp - GatherElements, ScatterND, TensorScatter ===//
//
// The shape rules through inferShapes: result shapes with symbolic dims,
// the operand relations they check, and constant indices checked at import.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/ShapeInference.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

struct Builder {
  Graph graph;
  Value *input(const std::string &name, TensorType t) { return graph.addInput(name, t); }
  Value *ints(std::vector<int64_t> dims, std::vector<int64_t> values) {
    return graph.addConstant(graph.uniqueName("c"), Tensor::fromVector<int64_t>(dims, values));
  }
  Value *op(OpKind kind, std::vector<Value *> operands, AttributeMap attrs = {}) {
    Node *node = graph.createNode(kind, operands, 1, "n");
    for (auto &[name, value] : attrs)
      node->setAttr(name, value);
    return node->result(0);
  }
};

} // namespace

TEST(ScatterGatherRules, GatherElementsHasTheShapeOfItsIndices) {
  Builder b;
  Value *x = b.input("x", type(DType::F16, {sym("batch"), sym("seq"), 8}));
  Value *i = b.input("i", type(DType::I32, {sym("batch"), sym("seq"), 3}));
  Value *y = b.op(OpKind::GatherElements, {x, i}, {{"axis", -1}});
  inferShapes(b.graph);
  EXPECT_EQ(y->type().str(), "f16[batch, seq, 3]");
}

TEST(ScatterGatherRules, GatherElementsRefusesWhatCannotFit) {
  // Constant indices of `dims` holding `values` into f32[2, 3].
  auto errorFor = [](std::vector<int64_t> dims, std::vector<int64_t> values, int64_t axis) {
    Builder b;
    Value *x = b.input("x", f32({2, 3}));
    b.op(OpKind::GatherElements, {x, b.ints(dims, values)}, {{"axis", axis}});
    return errorOf([&] { inferShapes(b.graph); });
  };
  EXPECT_EQ(errorFor({2}, {0, 1}, 0),
            "node 'n': indices have rank 1 but data has rank 2 (they must be equal)");
  EXPECT_EQ(errorFor({2, 4}, std::vector<int64_t>(8, 0), 0),
            "node 'n': dimension 1 of the indices is 4 but must be at most 3");
  EXPECT_EQ(errorFor({1, 2}, {0, -4}, 1),
            "node 'n': index -4 (element 1 of the indices) is out of range for axis 1 of size 3");
  EXPECT_NE(errorFor({1, 2}, {0, 0}, 2), "");
}

TEST(ScatterGatherRules, ScatterNDHasTheShapeOfItsData) {
  Builder b;
  Value *mask = b.input("mask", type(DType::F32, {sym("batch"), 1, sym("seq"), sym("seq")}));
  Value *where = b.input("where", type(DType::I64, {sym("n"), 4}));
  Value *fill = b.input("fill", type(DType::F32, {sym("n")}));
  Value *y = b.op(OpKind::ScatterND, {mask, where, fill});
  // Rows: indices [r, 1] replace slices of the trailing axes.
  Value *table = b.input("table", type(DType::F32, {1024, 64}));
  Value *rows = b.input("rows", type(DType::I64, {sym("r"), 1}));
  Value *values = b.input("values", type(DType::F32, {sym("r"), 64}));
  Value *z = b.op(OpKind::ScatterND, {table, rows, values}, {{"reduction", "add"}});
  inferShapes(b.graph);
  EXPECT_EQ(y->type().str(), "f32[batch, 1, seq, seq]");
  EXPECT_EQ(z->type().str(), "f32[1024, 64]");
}

TEST(ScatterGatherRules, ScatterNDRefusesWhatCannotFit) {
  struct Case {
    std::vector<int64_t> indexDims, indexValues;
    std::vector<Dim> updateDims;
    std::string reduction;
    DType updateType;
    std::string error;
  };
  std::vector<Case> cases = {
      {{1, 3},
       {0, 0, 0},
       {1},
       "none",
       DType::F32,
       "node 'n': the last dimension of the indices is 3 but must be between 1 and the data's "
       "rank 2"},
      {{2, 1},
       {0, 1},
       {2, 4},
       "none",
       DType::F32,
       "node 'n': dimension 1 of the updates is 4 but must be 3"},
      {{2, 1},
       {0, 1},
       {2},
       "none",
       DType::F32,
       "node 'n': updates have rank 1 but must have rank 2 (indices rank - 1 + data rank - 1)"},
      {{2, 2},
       {0, 0, 1, 3},
       {2},
       "none",
       DType::F32,
       "node 'n': index 3 (row 1 of the indices, position 1) is out of range for axis 1 of size "
       "3"},
      {{1, 1},
       {0},
       {1, 3},
       "sum",
       DType::F32,
       "node 'n': ScatterND reduction must be none, add, mul, max or min, got 'sum'"},
      {{1, 1}, {0}, {1, 3}, "none", DType::F16, "node 'n': updates are f16 but data is f32"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.error);
    Builder b;
    Value *x = b.input("x", f32({2, 3}));
    Value *u = b.input("u", type(c.updateType, c.updateDims));
    b.op(OpKind::ScatterND, {x, b.ints(c.indexDims, c.indexValues), u},
         {{"reduction", c.reduction}});
    EXPECT_EQ(errorOf([&] { inferShapes(b.graph); }), c.error);
  }
}

TEST(ScatterGatherRules, TensorScatterHasTheShapeOfItsCache) {
  Builder b;
  Value *past = b.input("past", type(DType::F16, {sym("batch"), 4, 64, 8}));
  Value *update = b.input("update", type(DType::F16, {sym("batch"), 4, sym("seq"), 8}));
  Value *w = b.input("w", type(DType::I64, {sym("batch")}));
  Value *y = b.op(OpKind::TensorScatter, {past, update, w});
  Value *z = b.op(OpKind::TensorScatter, {past, update}, {{"mode", "circular"}, {"axis", 2}});
  inferShapes(b.graph);
  EXPECT_EQ(y->type().str(), "f16[batch, 4, 64, 8]");
  EXPECT_EQ(z->type().str(), "f16[batch, 4, 64, 8]");
}

TEST(ScatterGatherRules, TensorScatterRefusesWhatCannotFit) {
  struct Case {
    std::vector<Dim> updateDims;
    std::vector<int64_t> writeIndices; ///< Constant, [2]; empty: none.
    int64_t axis;
    std::string mode;
    std::string error;
  };
  std::vector<Case> cases = {
      {{2, 3, 2, 5},
       {},
       0,
       "linear",
       "node 'n': TensorScatter axis cannot be 0, the batch axis of the write indices"},
      {{2, 3, 5}, {}, -2, "linear", "node 'n': update has rank 3 but past_cache has rank 4"},
      {{2, 4, 2, 5}, {}, -2, "linear", "node 'n': dimension 1 of the update is 4 but must be 3"},
      {{2, 3, 8, 5},
       {},
       -2,
       "linear",
       "node 'n': the update's length on axis 2 is 8 but must be at most 7"},
      {{2, 3, 2, 5},
       {},
       -2,
       "ring",
       "node 'n': TensorScatter mode must be linear or circular, got 'ring'"},
      {{2, 3, 2, 5},
       {0, 6},
       -2,
       "linear",
       "node 'n': write index 6 of batch row 1 leaves no room for 2 update positions in a cache "
       "of 7 (linear mode)"},
      {{2, 3, 2, 5},
       {-1, 0},
       2,
       "linear",
       "node 'n': write index -1 of batch row 0 leaves no room for 2 update positions in a cache "
       "of 7 (linear mode)"},
      {{2, 3, 2, 5}, {-1, 9}, 2, "circular", ""},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.error);
    Builder b;
    Value *past = b.input("past", f32({2, 3, 7, 5}));
    Value *u = b.input("u", type(DType::F32, c.updateDims));
    std::vector<Value *> operands = {past, u};
    if (!c.writeIndices.empty())
      operands.push_back(b.ints({2}, c.writeIndices));
    b.op(OpKind::TensorScatter, operands, {{"axis", c.axis}, {"mode", c.mode}});
    EXPECT_EQ(errorOf([&] { inferShapes(b.graph); }), c.error);
  }
  // Write indices of another length than the batch.
  Builder b;
  b.op(OpKind::TensorScatter, {b.input("past", f32({2, 3, 7, 5})), b.input("u", f32({2, 3, 1, 5})),
                               b.ints({3}, {0, 0, 0})});
  EXPECT_EQ(errorOf([&] { inferShapes(b.graph); }),
            "node 'n': the length of write_indices is 3 but must be 2");
}
