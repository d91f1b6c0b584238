//===- tests/unit/ir/VerifierTest.cpp - Structural checks, broken on purpose ---===//
//
// The public Graph API keeps use lists and result bookkeeping consistent, so
// the few invariants it cannot break are broken through GraphTestAccess, the
// test-only friend of Value.
//
//===----------------------------------------------------------------------===//
#include "GraphTestAccess.h"
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/Verifier.h"
#include "ir/text/Parser.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

using namespace onnxc;
using namespace onnxc::test;

namespace {

std::string verifyError(const Graph &g) {
  try {
    verifyGraph(g);
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_VERIFY_ERROR(graph, fragment)                                                       \
  do {                                                                                             \
    std::string message = verifyError(graph);                                                      \
    EXPECT_NE(message.find(fragment), std::string::npos) << "got: " << message;                    \
  } while (0)

// x -> Relu(%r) -> Add(%r, %one) = %y, output y.
struct SmallGraph {
  Graph g{"small"};
  Value *x, *one;
  Node *relu, *add;
  SmallGraph() {
    x = g.addInput("x", f32({2}));
    one = g.addConstant("one", Tensor::fromVector<float>({2}, {1, 1}));
    relu = g.createNode(OpKind::Relu, {x}, 1, "relu", {"r"});
    add = g.createNode(OpKind::Add, {relu->result(), one}, 1, "add", {"y"});
    g.addOutput("y", add->result());
  }
};

} // namespace

TEST(Verifier, ValidGraphsPass) {
  SmallGraph s;
  EXPECT_NO_THROW(verifyGraph(s.g));
  std::unique_ptr<Graph> parsed =
      parseGraph("graph @g(%x: f32[b, 4], %k: i64[1]) -> (%y: f32[b, 4], %x: f32[b, 4]) {\n"
                 "  const %s: i64[1] = dense<[0]>\n"
                 "  %t = Transpose(%x) {perm = [1, 0]}\n"
                 "  %c = Concat(%x, %x) {axis = -1}\n"
                 "  %sl = Slice(%c, %s, %k, _, %s)\n"
                 "  %y, %m = LayerNormalization(%sl, %x) {axis = 1}\n"
                 "  return %y, %x\n"
                 "}\n");
  EXPECT_NO_THROW(verifyGraph(*parsed));
}

TEST(Verifier, OperandAndResultCounts) {
  {
    SmallGraph s;
    s.g.createNode(OpKind::Add, {s.x}, 1, "lonely");
    EXPECT_VERIFY_ERROR(s.g, "node 'lonely': Add takes 2 operands, got 1");
  }
  {
    SmallGraph s;
    s.g.createNode(OpKind::Relu, {s.x}, 2, "two");
    EXPECT_VERIFY_ERROR(s.g, "node 'two': Relu has 1 results, got 2");
  }
  {
    SmallGraph s;
    s.g.createNode(OpKind::Slice, {s.x, s.one, s.one, nullptr}, 1, "slice");
    EXPECT_VERIFY_ERROR(s.g, "node 'slice': operand list ends with an absent operand");
  }
  {
    SmallGraph s;
    s.g.createNode(OpKind::Where, {nullptr, s.x, s.x}, 1, "where");
    EXPECT_VERIFY_ERROR(s.g, "node 'where': operand 0 of Where is required but absent");
  }
  {
    SmallGraph s;
    s.g.createNode(OpKind::Concat, {s.x, nullptr, s.x}, 1, "cat")->setAttr("axis", 0);
    EXPECT_VERIFY_ERROR(s.g, "operand 1 of Concat is required");
  }
}

TEST(Verifier, UseListsMirrorOperands) {
  {
    SmallGraph s;
    GraphTestAccess::uses(*s.x).clear(); // Relu still reads x
    EXPECT_VERIFY_ERROR(s.g, "node 'relu': the use list of '%x' does not record operand 0");
  }
  {
    SmallGraph s;
    GraphTestAccess::uses(*s.x).push_back({s.relu, 0}); // recorded twice
    EXPECT_VERIFY_ERROR(s.g, "does not record operand 0 exactly once");
  }
  {
    SmallGraph s;
    GraphTestAccess::uses(*s.one).push_back({s.relu, 0}); // relu's operand 0 is x, not one
    EXPECT_VERIFY_ERROR(s.g, "value '%one' records a use as operand 0 of node 'relu'");
  }
  {
    // A node of another graph reads this graph's value: its use list then
    // names a node that is not in this graph.
    SmallGraph s;
    Graph other;
    other.createNode(OpKind::Neg, {s.x}, 1, "foreign");
    EXPECT_VERIFY_ERROR(s.g, "value '%x' has a use by a node that is not in the graph");
    EXPECT_VERIFY_ERROR(other, "node 'foreign': operand 0 '%x' is a value of another graph");
  }
}

TEST(Verifier, DefinitionsPrecedeUses) {
  SmallGraph s;
  s.g.moveNodeBefore(s.add, s.relu);
  EXPECT_VERIFY_ERROR(s.g, "node 'add': operand 0 '%r' is used before it is defined");
}

TEST(Verifier, OutputsAreBoundToLiveValues) {
  {
    SmallGraph s;
    s.g.addOutput("dangling", nullptr);
    EXPECT_VERIFY_ERROR(s.g, "graph output 'dangling' is not bound to a value");
  }
  {
    SmallGraph s;
    Graph other;
    s.g.addOutput("z", other.addInput("z", f32({1})));
    EXPECT_VERIFY_ERROR(s.g, "graph output 'z' is bound to a value of another graph");
  }
  {
    SmallGraph s;
    s.g.addOutput("y", s.x);
    EXPECT_VERIFY_ERROR(s.g, "graph output 'y' is declared twice");
  }
}

TEST(Verifier, ConstantTypeMatchesItsData) {
  SmallGraph s;
  s.one->setType(f32({3}));
  EXPECT_VERIFY_ERROR(s.g, "constant '%one' has type f32[3] but its data is f32[2]");
  s.one->setType({DType::F16, Shape::fromConstants({2})});
  EXPECT_VERIFY_ERROR(s.g, "has type f16[2] but its data is f32[2]");
}

TEST(Verifier, ResultsKnowTheirDefinition) {
  {
    SmallGraph s;
    GraphTestAccess::setResultIndex(*s.relu->result(), 1);
    EXPECT_VERIFY_ERROR(s.g, "value '%r' is result 0 of node 'relu' but does not record it");
  }
  {
    SmallGraph s;
    GraphTestAccess::setDefiningNode(*s.relu->result(), s.add);
    EXPECT_VERIFY_ERROR(s.g, "value '%r' is result 0 of node 'relu'");
  }
  {
    SmallGraph s;
    s.g.renameValue(s.x, "x2");
    GraphTestAccess::setName(*s.x, "x"); // renamed behind the graph's back
    EXPECT_VERIFY_ERROR(s.g, "value '%x' is not registered under its name");
  }
}

TEST(Verifier, AttributeSanity) {
  auto withNode = [](OpKind kind, const std::string &attr, Attribute value) {
    auto g = std::make_unique<Graph>();
    Value *x = g->addInput("x", f32({2, 3}));
    Node *n = g->createNode(kind, {x}, 1, "n");
    n->setAttr(attr, std::move(value));
    g->addOutput("y", n->result());
    return g;
  };
  EXPECT_VERIFY_ERROR(*withNode(OpKind::Transpose, "perm", std::vector<int64_t>{0, 0}),
                      "node 'n': perm is not a permutation of 0..1");
  EXPECT_VERIFY_ERROR(*withNode(OpKind::Transpose, "perm", std::vector<int64_t>{2, 0, 1}),
                      "perm has 3 entries but the input has rank 2");
  EXPECT_VERIFY_ERROR(*withNode(OpKind::Transpose, "perm", 1), "'perm' must be a list of ints");
  EXPECT_VERIFY_ERROR(*withNode(OpKind::Softmax, "axis", 1.0f), "'axis' must be an int");
  EXPECT_VERIFY_ERROR(*withNode(OpKind::Softmax, "axis", 2), "axis 2 is out of range for rank 2");
  EXPECT_VERIFY_ERROR(*withNode(OpKind::Concat, "other", 0), "missing required attribute 'axis'");
  EXPECT_NO_THROW(verifyGraph(*withNode(OpKind::Flatten, "axis", 2)));
  EXPECT_NO_THROW(verifyGraph(*withNode(OpKind::Softmax, "axis", -2)));

  Graph g;
  Value *data = g.addInput("data", f32({4, 5}));
  Value *idx = g.addInput("idx", {DType::I64, Shape::fromConstants({2})});
  g.createNode(OpKind::Gather, {data, idx}, 1, "gather")->setAttr("axis", "rows");
  EXPECT_VERIFY_ERROR(g, "node 'gather': attribute 'axis' must be an int");
}
