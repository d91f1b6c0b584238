//===- tests/unit/TestUtil.cpp - Helpers shared by the unit tests ---------===//
#include "TestUtil.h"

#include "ir/eval/Evaluator.h"
#include "ir/eval/Kernels.h"
#include "ir/infer/ShapeRules.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace onnxc::test {

bool sanitizedRun() {
  static const bool sanitized = [] {
    const char *value = std::getenv("ONNXC_SANITIZED_TESTS");
    return value && std::string(value) == "1";
  }();
  return sanitized;
}

Dim sym(const std::string &name) { return Dim::symbol(name); }

TensorType type(DType dtype, std::vector<Dim> dims) { return {dtype, Shape(std::move(dims))}; }

TensorType f32(std::vector<Dim> dims) { return type(DType::F32, std::move(dims)); }

Tensor randomTensor(std::vector<int64_t> dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DType::F32, std::move(dims));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = dist(rng);
  return t;
}

Node *makeNode(Graph &g, OpKind kind, const std::vector<const Tensor *> &operands,
               unsigned numResults) {
  std::vector<Value *> values;
  for (size_t i = 0; i < operands.size(); ++i)
    values.push_back(
        operands[i] ? g.addInput(g.uniqueName("in" + std::to_string(i)),
                                 {operands[i]->dtype(), Shape::fromConstants(operands[i]->dims())})
                    : nullptr);
  return g.createNode(kind, values, numResults, "n");
}

std::vector<Tensor> runKernel(const Node &node, const std::vector<const Tensor *> &operands) {
  std::vector<Tensor> results(node.numResults());
  referenceKernels().kernels[unsigned(node.kind())](node, operands, results);
  return results;
}

void inferNode(Node &node) {
  InferenceContext context(*node.graph());
  shapeRules().rules[unsigned(node.kind())](node, context);
}

std::vector<Tensor> runOpResults(OpKind kind, const std::vector<std::optional<Tensor>> &inputs,
                                 const AttributeMap &attrs, unsigned numResults) {
  Graph g;
  std::vector<Value *> values;
  std::vector<const Tensor *> operands;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(inputs[i] ? g.addConstant("c" + std::to_string(i), *inputs[i]) : nullptr);
    operands.push_back(inputs[i] ? &*inputs[i] : nullptr);
  }
  Node *node = g.createNode(kind, values, numResults, "n");
  for (const auto &[name, value] : attrs)
    node->setAttr(name, value);
  return evaluateNode(*node, operands);
}

Tensor runOp(OpKind kind, const std::vector<std::optional<Tensor>> &inputs,
             const AttributeMap &attrs) {
  return runOpResults(kind, inputs, attrs)[0];
}

std::vector<double> asDoubles(const Tensor &t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.push_back(t.elementAsDouble(i));
  return out;
}

void expectNear(const Tensor &got, const std::vector<double> &expected, double tolerance) {
  ASSERT_EQ(size_t(got.numElements()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(got.elementAsDouble(int64_t(i)), expected[i], tolerance) << "element " << i;
}

size_t countKind(const Graph &g, OpKind kind) {
  size_t n = 0;
  for (const auto &node : g.nodes())
    n += node->kind() == kind;
  return n;
}

bool hasReferenceKernels(std::initializer_list<OpKind> kinds) {
  for (OpKind kind : kinds)
    if (!hasReferenceKernel(kind))
      return false;
  return true;
}

void expectSameOutputs(const Graph &before, const Graph &after,
                       const std::map<std::string, Tensor> &inputs) {
  std::vector<Tensor> expected = evaluateGraph(before, inputs);
  std::vector<Tensor> got = evaluateGraph(after, inputs);
  ASSERT_EQ(expected.size(), got.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(expected[i].identicalTo(got[i])) << "output " << i;
}

} // namespace onnxc::test
