//===- tests/unit/TestUtil.h - Helpers shared by the unit tests -----------===//
//
// Builders and checks that several test files need: tensor types, random
// tensors, one-node graphs run through a kernel, a shape rule or the
// evaluator, and reading results back. A helper only one file needs stays
// in that file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::test {

/// The message of the onnxc::Error `body` throws ("" when it does not throw).
template <typename Body> std::string errorOf(Body body) {
  try {
    body();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// True in the sanitizer leg's unit shards (ONNXC_SANITIZED_TESTS=1, tests/unit/CMakeLists.txt).
bool sanitizedRun();

/// The values a shape sweep visits: all of them in the normal build; in the sanitizer leg only the
/// first and the last. There the point is the compiler's own C++ under ASan, which every value
/// drives through the same code, while the time goes to LLVM and the JIT'd kernels, neither of
/// which ASan sees; the normal leg checks every value's numbers.
template <typename T> std::vector<T> sweep(std::initializer_list<T> values) {
  std::vector<T> all(values);
  if (sanitizedRun() && all.size() > 2)
    return {all.front(), all.back()};
  return all;
}

/// A symbolic dimension.
Dim sym(const std::string &name);

/// A tensor type of `dtype` with the given (constant or symbolic) dims.
TensorType type(DType dtype, std::vector<Dim> dims);

/// An f32 tensor type with the given dims.
TensorType f32(std::vector<Dim> dims);

/// An f32 tensor of uniform values in [-1, 1), the same for the same seed.
Tensor randomTensor(std::vector<int64_t> dims, unsigned seed);

/// A node of `kind` named "n" whose operands are new graph inputs typed like
/// `operands` (null for an absent operand).
Node *makeNode(Graph &g, OpKind kind, const std::vector<const Tensor *> &operands,
               unsigned numResults = 1);

/// Runs `node`'s reference kernel on `operands` (null = absent), taken
/// straight from the kernel table, without the evaluator's operand checks.
std::vector<Tensor> runKernel(const Node &node, const std::vector<const Tensor *> &operands);

/// Applies `node`'s shape rule, taken straight from the rule table, without
/// the inference driver's count checks and contents propagation.
void inferNode(Node &node);

/// Evaluates a node of `kind` named "n" on constant operands (nullopt =
/// absent) with `attrs`, and returns its `numResults` results.
std::vector<Tensor> runOpResults(OpKind kind, const std::vector<std::optional<Tensor>> &inputs,
                                 const AttributeMap &attrs = {}, unsigned numResults = 1);

/// runOpResults for a node with one result.
Tensor runOp(OpKind kind, const std::vector<std::optional<Tensor>> &inputs,
             const AttributeMap &attrs = {});

/// The elements of `t`; T must be its storage type.
template <typename T> std::vector<T> values(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numElements());
}

/// The elements of `t` of any dtype, converted to double.
std::vector<double> asDoubles(const Tensor &t);

/// Expects `got` to have `expected`'s elements, each within `tolerance`.
void expectNear(const Tensor &got, const std::vector<double> &expected, double tolerance = 1e-5);

/// The number of nodes of `kind` in `g`.
size_t countKind(const Graph &g, OpKind kind);

/// Whether the evaluator has a kernel for every one of `kinds`.
bool hasReferenceKernels(std::initializer_list<OpKind> kinds);

/// Expects `after` (a rewritten copy of `before`) to compute bit-identical
/// outputs on `inputs`.
void expectSameOutputs(const Graph &before, const Graph &after,
                       const std::map<std::string, Tensor> &inputs);

} // namespace onnxc::test
