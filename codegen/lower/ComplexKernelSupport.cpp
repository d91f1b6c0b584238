//===- codegen/lower/ComplexKernelSupport.cpp - Helpers of the complex ops ===//
#include "codegen/lower/ComplexKernelSupport.h"

#include "llvm/IR/Constants.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

Value *loadReal(FunctionBuilder &f, DType type, Value *base, Value *index) {
  return f.convert(f.loadElement(type, base, index), type, realDType(type));
}

void storeReal(FunctionBuilder &f, DType type, Value *value, Value *base, Value *index) {
  f.storeElement(type, f.convert(value, realDType(type), type), base, index);
}

Value *realConstant(FunctionBuilder &f, DType type, double value) {
  return f.constant(realDType(type), value);
}

Value *minusInfinity(Value *like) { return ConstantFP::getInfinity(like->getType(), true); }

Value *emitRealMath(FunctionBuilder &f, vmath::MathFunction function, Value *x) {
  IRBuilder<> &b = f.ir();
  if (x->getType()->getScalarType()->isFloatTy()) // float or a vector of float
    return vmath::emitMathFunction(b, function, x);
  Value *narrow = b.CreateFPTrunc(x, b.getFloatTy());
  return b.CreateFPExt(vmath::emitMathFunction(b, function, narrow), x->getType());
}

Value *referenceMax(FunctionBuilder &f, Value *a, Value *b) {
  return f.ir().CreateSelect(f.ir().CreateFCmpOLT(a, b), b, a);
}

Value *clamp(FunctionBuilder &f, Value *x, Value *lo, Value *hi) {
  IRBuilder<> &b = f.ir();
  Value *upper = b.CreateSelect(b.CreateFCmpOLT(hi, x), hi, x);
  return b.CreateSelect(b.CreateFCmpOLT(x, lo), lo, upper);
}

Value *stackArray(FunctionBuilder &f, Type *type, int64_t count, const char *name) {
  IRBuilder<> &entry = f.hoisted();
  AllocaInst *array = entry.CreateAlloca(type, entry.getInt64(count), name);
  array->setAlignment(Align(32));
  return array;
}

Value *stackSlot(FunctionBuilder &f, Type *type, const char *name) {
  return f.hoisted().CreateAlloca(type, nullptr, name);
}

Value *loadIndex(FunctionBuilder &f, DType type, Value *base, Value *index) {
  return f.convert(f.loadElement(type, base, index), type, DType::I64);
}

} // namespace onnxc::lower
