//===- ir/infer/ShapeRules.h - The table of per-op shape rules -------------===//
//
// Internal to ir/infer: each op-family file registers its rules here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/OpKind.h"
#include "ir/infer/ShapeInference.h"

#include <array>

namespace onnxc {

/// Sets dtype and shape of node's results from its operands' types (and the
/// known contents of integer operands). Throws onnxc::Error on inconsistency.
using ShapeRule = void (*)(Node &node, InferenceContext &context);

struct ShapeRuleTable {
  std::array<ShapeRule, kNumOpKinds> rules{};
  void add(OpKind kind, ShapeRule rule) { rules[unsigned(kind)] = rule; }
};

void registerElementwiseShapeRules(
    ShapeRuleTable &table); // elementwise, logic, Cast, Softmax, norms, reductions
void registerMovementShapeRules(
    ShapeRuleTable &table); // Reshape ... Trilu, Constant, Identity, Dropout
void registerLinearAlgebraShapeRules(
    ShapeRuleTable
        &table); // MatMul Gemm Einsum Attention RotaryEmbedding LinearAttention Conv LSTM GRU RNN
void registerScatterGatherShapeRules(
    ShapeRuleTable &table); // GatherElements ScatterND TensorScatter
void registerQuantizationShapeRules(ShapeRuleTable &table); // QuantizeLinear ... QLinearConv
void registerPoolingShapeRules(ShapeRuleTable &table);      // Pad MaxPool AveragePool ConvTranspose
void registerResizeShapeRules(ShapeRuleTable &table);       // Resize
void registerControlFlowShapeRules(ShapeRuleTable &table);  // If Loop Scan

/// The largest rank a rule derives from the length of a tensor (a Reshape
/// target or ConstantOfShape shape of unknown contents, Unsqueeze axes).
/// Real models stay far below it; past it the model is broken or hostile,
/// and building that many dims would cost unbounded time and memory.
constexpr int64_t kMaxDerivedRank = 64;

/// `base` + `length` as the rank of a result whose dims `what` (an operand
/// of `length` elements) adds; throws naming the node when it is past
/// kMaxDerivedRank.
size_t derivedRank(const Node &node, size_t base, int64_t length, const char *what);

/// Every family's rules: the table inferNodeShapes applies (unit tests call
/// rules from it directly, without the driver's count checks and contents
/// propagation).
const ShapeRuleTable &shapeRules();

} // namespace onnxc
