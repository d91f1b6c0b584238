//===- ir/eval/Kernels.h - The table of reference kernels ------------------===//
//
// Internal to ir/eval: each op-family file registers its kernels here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Node.h"
#include "ir/OpKind.h"
#include "ir/Tensor.h"

#include <array>
#include <vector>

namespace onnxc {

/// Computes `node` on `operands` (null = absent optional operand) into
/// `results`, which has node.numResults() default-constructed tensors.
using Kernel = void (*)(const Node &node, const std::vector<const Tensor *> &operands,
                        std::vector<Tensor> &results);

struct KernelTable {
  std::array<Kernel, kNumOpKinds> kernels{};
  void add(OpKind kind, Kernel kernel) { kernels[unsigned(kind)] = kernel; }
};

void registerElementwiseKernels(KernelTable &table);   // arithmetic, unary, logic, Where, Clip
void registerCastKernels(KernelTable &table);          // Cast, CastLike, BitCast
void registerReductionKernels(KernelTable &table);     // Reduce*, ArgMax/Min, CumSum/Prod
void registerNormalizationKernels(KernelTable &table); // Softmax, LogSoftmax, LayerNorm, RMSNorm
void registerMovementKernels(KernelTable &table); // Reshape ... Trilu, Constant, Identity, Dropout
void registerLinearAlgebraKernels(KernelTable &table);     // MatMul, Gemm, Einsum
void registerAttentionKernels(KernelTable &table);         // Attention, RotaryEmbedding
void registerAdditiveAttentionKernels(KernelTable &table); // AdditiveAttention (onnxc)
void registerLinearAttentionKernels(KernelTable &table);   // LinearAttention
void registerConvolutionKernels(KernelTable &table);       // Conv
void registerRecurrentKernels(KernelTable &table);         // LSTM, GRU, RNN
void registerScatterGatherKernels(KernelTable &table); // GatherElements, ScatterND, TensorScatter
void registerQuantizationKernels(KernelTable &table);  // QuantizeLinear ... QLinearConv
void registerQuantizedGemmKernels(KernelTable &table); // DynamicQuantizedMatMul (onnxc)
void registerBlockQuantizedMatMulKernels(KernelTable &table); // BlockQuantizedMatMul (onnxc)
void registerPaddingKernels(KernelTable &table);              // Pad
void registerPoolingKernels(KernelTable &table);              // MaxPool, AveragePool, ConvTranspose
void registerResizeKernels(KernelTable &table);               // Resize
void registerControlFlowKernels(KernelTable &table);          // If, Loop, Scan

/// Every family's kernels: the table evaluateNode runs (unit tests call
/// kernels from it directly, without the evaluator's operand checks).
const KernelTable &referenceKernels();

} // namespace onnxc
