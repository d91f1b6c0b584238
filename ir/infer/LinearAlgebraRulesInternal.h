//===- ir/infer/LinearAlgebraRulesInternal.h - Linear algebra rule pieces -===//
//
// Internal to the linear algebra family (ir/infer/*Rules.cpp for MatMul, Gemm,
// Einsum, attention, convolution and recurrent ops, and the matching kernels
// in ir/eval/): the per-file registration hooks, and the Einsum equation
// parser shared by the shape rule and the reference kernel so that both read
// an equation the same way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/infer/ShapeRules.h"

#include <string>
#include <vector>

namespace onnxc {

void registerMatMulFamilyShapeRules(ShapeRuleTable &table);         // MatMul, Gemm, Einsum
void registerAttentionShapeRules(ShapeRuleTable &table);            // Attention, RotaryEmbedding
void registerAdditiveAttentionShapeRules(ShapeRuleTable &table);    // AdditiveAttention
void registerLinearAttentionShapeRules(ShapeRuleTable &table);      // LinearAttention
void registerConvolutionShapeRules(ShapeRuleTable &table);          // Conv
void registerRecurrentShapeRules(ShapeRuleTable &table);            // LSTM, GRU, RNN
void registerQuantizedGemmShapeRules(ShapeRuleTable &table);        // DynamicQuantizedMatMul
void registerBlockQuantizedMatMulShapeRules(ShapeRuleTable &table); // BlockQuantizedMatMul

/// True when `a` and `b` certainly differ: their difference is a nonzero
/// constant (so 3 vs 4 and seq vs seq+1, but not batch vs seq or ? vs 4).
bool provablyDifferent(const Dim &a, const Dim &b);

/// Throws "node ...: <what> mismatch: <a> vs <b> (shapes <sa> and <sb>)" when
/// the two dims provably differ; otherwise, unless they are provably equal,
/// records that they must be equal (InferenceContext::assumeEqual).
void requireSameDim(InferenceContext &context, const Node &node, const Dim &a, const Dim &b,
                    const std::string &what, const Shape &shapeA, const Shape &shapeB);

/// The common dtype of the given operands (absent ones skipped): throws
/// naming the node when two known dtypes differ; Unknown if none is known.
DType commonOperandDType(const Node &node, const std::vector<size_t> &operandIndices);

/// Throws naming the node when one of its first `count` operands is absent.
void requireOperandsPresent(const Node &node, size_t count);

/// Sets every result of `node` to `dtype` with an unranked shape (for when
/// an operand's rank is unknown).
void setAllResultsUnranked(Node &node, DType dtype);

/// The result shape of a MatMul of ranked `a` and `b` (numpy matmul
/// broadcasting); throws naming `node` on a provable mismatch. Shared with
/// MatMulInteger and QLinearMatMul (QuantizationRules.cpp).
Shape matMulResultShape(InferenceContext &context, const Node &node, const Shape &a,
                        const Shape &b);

/// The result shape [N, M, spatial...] of a Conv of ranked X and W, with
/// `node`'s conv attributes (group, strides, pads, ...); shared with
/// ConvInteger and QLinearConv.
Shape convResultShape(InferenceContext &context, const Node &node, const Shape &x, const Shape &w);

/// An Einsum equation resolved against the operand ranks. Every axis carries
/// a label: letters are 0..51 (a-z, A-Z); the axes covered by `...` get
/// labels from kFirstEllipsisLabel on, right-aligned across operands so that
/// they broadcast like numpy batch dims.
struct EinsumSpec {
  static constexpr int kFirstEllipsisLabel = 52;
  std::vector<std::vector<int>> inputLabels; // one label per operand axis
  std::vector<int> outputLabels;             // one label per result axis
  int numEllipsisDims = 0;                   // the widest `...` among operands
  int numLabels() const { return kFirstEllipsisLabel + numEllipsisDims; }
};

/// Parses `equation` (explicit "ij,jk->ik" or implicit "ij,jk") for operands
/// of the given ranks. Throws onnxc::Error naming `node` on a malformed
/// equation, a term count or rank that does not match, or an output letter
/// that is repeated or absent from the inputs.
EinsumSpec parseEinsumEquation(const Node &node, const std::string &equation,
                               const std::vector<size_t> &ranks);

/// A printable name of an Einsum label ('i', or "...#0" for ellipsis axes).
std::string einsumLabelName(int label);

} // namespace onnxc
