//===- codegen/lower/quantization/QuantizationLoweringInternal.h - Q/DQ lowering pieces -===//
//
// Internal to QuantizationLowering.cpp and IntegerProductLowering.cpp: the
// scalar steps both compute the way ir/eval/QuantizationKernels.cpp does,
// and the integer products' lowerings, which QuantizationLowering.cpp
// registers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/IR/Intrinsics.h"

namespace onnxc::lower {

/// Refuses a value of unknown rank or with an unknown dim.
void requireKnownShape(LoweringContext &ctx, const Node &node, const onnxc::Value *value);
/// A call of the overloaded intrinsic `id` on args[0]'s type.
llvm::Value *callIntrinsic(FunctionBuilder &f, llvm::Intrinsic::ID id,
                           llvm::ArrayRef<llvm::Value *> args);
/// A value (integer or float computeType of `type`) as double.
llvm::Value *toDouble(FunctionBuilder &f, DType type, llvm::Value *value);
/// A float as the nearest value of `type` (f16/bf16 round; f32 unchanged).
llvm::Value *roundToFloatType(FunctionBuilder &f, DType type, llvm::Value *value);
/// roundeven(value) clamped to quantized `type`'s range, converted to
/// computeType(type); `value` is a double and not NaN.
llvm::Value *saturateToType(FunctionBuilder &f, DType type, llvm::Value *value);
/// The element of a scale or zero point for `index`: element 0 when it has
/// one element (per tensor).
llvm::Value *parameterIndex(FunctionBuilder &f, const onnxc::Value *param, llvm::Value *index);

/// MatMulInteger / QLinearMatMul (the integer GEMM when it applies, else a
/// loop nest).
void lowerIntegerMatMul(LoweringContext &ctx, const Node &node);
/// ConvInteger / QLinearConv (the integer GEMM when it applies, else a loop
/// nest).
void lowerIntegerConv(LoweringContext &ctx, const Node &node);

} // namespace onnxc::lower
