//===- codegen/lower/ComplexKernelSupport.h - Helpers of the complex ops ---===//
//
// Shared by the Attention, RotaryEmbedding, Conv and recurrent lowerings.
//
// These ops load elements of any floating dtype and compute in a "real" type: f64 tensors in
// double, every other float type (f32, f16, bf16) in float, as the kernels' accuracy target is f32.
// The transcendental functions come from codegen/kernels/VectorMath (float only), so
// an f64 kernel rounds their argument to float: those results carry f32
// accuracy (~1e-7 relative), well inside the node tests' tolerance.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/VectorMath.h"
#include "codegen/lower/FunctionBuilder.h"
#include "codegen/lower/LoweringContext.h"
#include "ir/DType.h"

namespace onnxc::lower {

/// The dtype arithmetic on `type` elements is done in.
inline DType realDType(DType type) { return type == DType::F64 ? DType::F64 : DType::F32; }

/// Element `index` of a `type` array at `base`, as realDType(type).
llvm::Value *loadReal(FunctionBuilder &f, DType type, llvm::Value *base, llvm::Value *index);
/// Stores a realDType(type) value as element `index` of a `type` array.
void storeReal(FunctionBuilder &f, DType type, llvm::Value *value, llvm::Value *base,
               llvm::Value *index);
/// A realDType(type) constant.
llvm::Value *realConstant(FunctionBuilder &f, DType type, double value);
/// -infinity of the value type of `like`.
llvm::Value *minusInfinity(llvm::Value *like);

/// exp / tanh / sigmoid / log of a float or double value (see the banner).
llvm::Value *emitRealMath(FunctionBuilder &f, vmath::MathFunction function, llvm::Value *x);

/// `a < b ? b : a`, the std::max of the reference kernels (a NaN `b` is
/// ignored, a NaN `a` is kept).
llvm::Value *referenceMax(FunctionBuilder &f, llvm::Value *a, llvm::Value *b);
/// std::clamp(x, lo, hi).
llvm::Value *clamp(FunctionBuilder &f, llvm::Value *x, llvm::Value *lo, llvm::Value *hi);

/// An array of `count` elements of `type` on the stack, allocated once in
/// the entry block (callers keep `count * size` to a few tens of KiB).
llvm::Value *stackArray(FunctionBuilder &f, llvm::Type *type, int64_t count, const char *name);
/// One stack slot of `type` for an accumulator updated inside nested loops
/// (promoted to a register by the optimizer).
llvm::Value *stackSlot(FunctionBuilder &f, llvm::Type *type, const char *name);

/// Whether a result is read by anything (an optional output the model
/// skipped has no uses, and may not even have a known shape).
inline bool isNeeded(const LoweringContext &ctx, const onnxc::Value *result) {
  return result->hasUses() || ctx.graph().isOutput(result);
}

/// Loads an integer element (any integer dtype) as i64.
llvm::Value *loadIndex(FunctionBuilder &f, DType type, llvm::Value *base, llvm::Value *index);

} // namespace onnxc::lower
