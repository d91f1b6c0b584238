//===- passes/attention/masks/MaskSymbolic.h - Symbolic evaluation of shape-only subgraphs ---===//
//
// Evaluates the values of a subgraph computed from constants and shapes
// alone (no input contents) without binding any symbol: each value becomes
// its dims (Dims) and its element as an expression over its axis indices
// (MaskExpr.h). Every op is followed with exact semantics; an op, operand or
// case it cannot follow exactly throws NotProvable naming what.
//
//   Constant / initializer -> a stored table (or a number, when uniform)
//   Shape, Size            -> Dims of the operand (evaluated here when it is
//                             itself shape-only; its inferred shape otherwise)
//   Range                  -> start + delta * x0 (integer, step +-1 when the
//                             length is symbolic)
//   elementwise            -> Add Sub Mul Div Neg Abs Min Max, comparisons,
//                             Not And Or Xor, Where, Cast, CastLike, Identity,
//                             with numpy broadcasting of provably equal dims
//   movement               -> Unsqueeze Squeeze Transpose Expand Concat Gather
//                             (constant indices), Reshape that only adds or
//                             removes unit axes, Slice (see below)
//   creation               -> ConstantOfShape, Trilu
//
// Slice to a symbolic end of a constant dimension (a stored triangle cut to
// [seq, seq]) is taken as staying inside the table: where it would not, the
// runtime result is shorter than the symbolic one (and at least 2 long), so
// the original graph fails to broadcast it against the scores. Such tensors
// are marked `assumesInTable`, and nothing reads their dims as numbers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/attention/masks/MaskExpr.h"

#include <unordered_map>
#include <vector>

namespace onnxc::mask {

/// A tensor computed from shapes: its element over variables 0..rank-1.
struct SymbolicTensor {
  DType dtype = DType::Unknown;
  std::vector<Dim> dims;
  ExprPtr element;
  /// Valid where a symbolic slice of a constant dimension stays in range;
  /// the original graph fails elsewhere (see the file comment).
  bool assumesInTable = false;
};

/// Evaluates values of shape-only subgraphs, remembering every result.
class SymbolicEvaluator {
public:
  /// The symbolic value of `value`; throws NotProvable.
  const SymbolicTensor &evaluate(const Value *value);

  /// The known integer contents of a rank-0 or short rank-1 tensor as Dims.
  static std::vector<Dim> contents(const SymbolicTensor &tensor);

private:
  SymbolicTensor evaluateNode(const Node &node);
  std::vector<Dim> dimsRead(const Value *measured);

  std::unordered_map<const Value *, SymbolicTensor> results_;
};

// Op rules, one per family (MaskSymbolic.cpp, MaskSymbolicMovement.cpp).
// `operands` are the evaluated operands (null for absent ones).
using SymbolicOperands = std::vector<const SymbolicTensor *>;

SymbolicTensor elementwiseRule(const Node &node, const SymbolicOperands &operands);
SymbolicTensor movementRule(const Node &node, const SymbolicOperands &operands);

/// Broadcasting and re-indexing shared by the rules.
std::vector<Dim> broadcastDims(const std::vector<Dim> &a, const std::vector<Dim> &b);
/// `tensor`'s element read at the index of a result with `dims` into which
/// it broadcasts (unit axes read index 0).
ExprPtr alignedElement(const SymbolicTensor &tensor, const std::vector<Dim> &dims);
/// A rank-1 int64 tensor holding `values`.
SymbolicTensor vectorOf(const std::vector<Dim> &values);
/// Constant integer contents; NotProvable when any is symbolic.
std::vector<int64_t> constantContents(const SymbolicTensor &tensor, const char *what);
bool isUnit(const Dim &dim);

} // namespace onnxc::mask
