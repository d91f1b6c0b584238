//===- codegen/lower/OpLowerings.h - The table of op lowerings -------------===//
//
// Internal to codegen/lower: each op-family file registers the lowerings of
// its ops here, mirroring ir/eval/Kernels.h. An op without a lowering is a
// compile-time error naming the node.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"
#include "ir/OpKind.h"

#include <array>
#include <set>
#include <string>
#include <vector>

namespace onnxc::lower {

using OpLowering = void (*)(LoweringContext &context, const Node &node);

struct LoweringTable {
  std::array<OpLowering, kNumOpKinds> lowerings{};
  void add(OpKind kind, OpLowering lowering) { lowerings[unsigned(kind)] = lowering; }
};

void registerElementwiseLowerings(
    LoweringTable &table);                            // arithmetic, unary, logic, Cast, Where, Clip
void registerMovementLowerings(LoweringTable &table); // Reshape ... Trilu, creation ops, Identity
void registerReductionLowerings(LoweringTable &table); // Reduce*, ArgMax/Min, CumSum/Prod
void registerNormalizationLowerings(
    LoweringTable &table); // Softmax, LogSoftmax, LayerNorm, RMSNorm
void registerLinearAlgebraLowerings(LoweringTable &table); // MatMul, Gemm, Einsum
void registerAttentionLowerings(
    LoweringTable &table); // Attention, RotaryEmbedding, AdditiveAttention, LinearAttention
void registerConvolutionLowerings(LoweringTable &table); // Conv
void registerRecurrentLowerings(LoweringTable &table);   // LSTM, GRU, RNN
void registerScatterGatherLowerings(
    LoweringTable &table); // GatherElements, ScatterND, TensorScatter
void registerQuantizationLowerings(LoweringTable &table);         // QuantizeLinear ... QLinearConv
void registerQuantizedGemmLowerings(LoweringTable &table);        // (Dynamic)QuantizedMatMul
void registerBlockQuantizedMatMulLowerings(LoweringTable &table); // BlockQuantizedMatMul
void registerQuantizedConvLowerings(LoweringTable &table);        // QuantizedConv
void registerPadLowerings(LoweringTable &table);                  // Pad
void registerPoolingLowerings(LoweringTable &table); // MaxPool, AveragePool, ConvTranspose
void registerResizeLowerings(LoweringTable &table);  // Resize

void registerControlFlowLowerings(LoweringTable &table); // If (run-time condition), Loop, Scan

/// Throws naming the first If, Loop or Scan of `order` (or nested in a
/// subgraph) that cannot compile: branches of different shapes, ops without
/// a kernel, values whose size does not follow from the symbols in `bound`
/// (the graph inputs' whole dims), loop-carried values that change shape
/// (ControlFlowLowering.cpp, LoopLowering.cpp).
void checkControlFlow(const std::vector<Node *> &order, const std::set<std::string> &bound);

/// Every family's lowerings.
const LoweringTable &opLowerings();

} // namespace onnxc::lower
