//===- ir/infer/MovementRulesInternal.h - Movement rule pieces ------------===//
//
// Internal to the data movement family (ir/infer/MovementRules.cpp,
// SliceRules.cpp and CreationRules.cpp): the registration hooks of Slice and
// the creation ops, and the operand checks and result setters they all use.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/infer/ShapeRules.h"

#include <string>
#include <vector>

namespace onnxc {

void registerCreationShapeRules(ShapeRuleTable &table); // Shape Size Range ConstantOfShape Constant
void registerSliceShapeRules(ShapeRuleTable &table);    // Slice

/// Operand i; throws "missing operand '<what>'" naming the node when absent.
const Value *requireNamedOperand(const Node &node, size_t i, const char *what);

/// A shape-like operand: present, integer, and rank 1 (or 0 when
/// `allowScalar`) when its rank is known.
const Value *requireIndexOperand(const Node &node, size_t i, const char *what,
                                 bool allowScalar = false);

/// Sets the type of result i.
void setResult(Node &node, size_t i, DType dtype, Shape shape);

/// `count` new symbols named after `hint`, for dims nothing else names.
std::vector<Dim> freshDims(InferenceContext &context, size_t count, const std::string &hint);

} // namespace onnxc
