//===- codegen/lower/quantization/QuantizedGemmLowering.h - ONNX's integer ops on the GEMM -===//
//
// MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv with constant
// weights run on the integer GEMM (IntegerGemm.h) instead of
// QuantizationLowering.cpp's loop nests. Each returns false, having emitted
// nothing, when the node does not fit (weights or parameters computed at run
// time, per-row activation parameters, grouped or 3-D convolutions...); the
// loop nest then computes it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

namespace onnxc::lower {

/// MatMulInteger / QLinearMatMul (QuantizedGemmLowering.cpp).
bool lowerIntegerMatMulOnGemm(LoweringContext &ctx, const Node &node);

/// ConvInteger / QLinearConv (QuantizedConvLowering.cpp).
bool lowerIntegerConvOnGemm(LoweringContext &ctx, const Node &node);

} // namespace onnxc::lower
