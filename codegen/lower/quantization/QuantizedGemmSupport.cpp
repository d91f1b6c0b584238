//===- codegen/lower/quantization/QuantizedGemmSupport.cpp - Pieces of the integer lowerings -===//
#include "codegen/lower/quantization/QuantizedGemmSupport.h"

#include "llvm/IR/Constants.h"

#include <cstring>

namespace onnxc::lower {

ActivationBytes ActivationBytes::of(DType source, DType quantized) {
  ActivationBytes a;
  a.source = source;
  if (quantized == DType::I8) {
    a.low = -128;
    a.high = 127;
    a.storedOffset = 128;
  }
  return a;
}

llvm::Value *roundEven(llvm::IRBuilder<> &ir, llvm::Value *v) {
  llvm::Value *magic = llvm::ConstantFP::get(v->getType(), 12582912.0); // 1.5 * 2^23
  return ir.CreateFSub(ir.CreateFAdd(v, magic), magic);
}

llvm::Value *clampFloat(llvm::IRBuilder<> &ir, llvm::Value *v, double lo, double hi) {
  llvm::Value *low = llvm::ConstantFP::get(v->getType(), lo);
  llvm::Value *high = llvm::ConstantFP::get(v->getType(), hi);
  v = ir.CreateSelect(ir.CreateFCmpOLT(v, low), low, v);
  return ir.CreateSelect(ir.CreateFCmpOLT(high, v), high, v);
}

llvm::Value *storedActivation(llvm::IRBuilder<> &ir, const ActivationBytes &a, llvm::Value *x,
                              llvm::Value *scales, llvm::Value *zeros) {
  auto *vector = llvm::cast<llvm::FixedVectorType>(x->getType());
  auto *ints = llvm::FixedVectorType::get(ir.getInt32Ty(), vector->getNumElements());
  llvm::Value *q;
  if (a.source == DType::F32)
    q = ir.CreateFPToSI(clampFloat(ir,
                                   ir.CreateFAdd(roundEven(ir, ir.CreateFDiv(x, scales)), zeros),
                                   a.low, a.high),
                        ints);
  else
    q = a.source == DType::I8 ? ir.CreateSExt(x, ints) : ir.CreateZExt(x, ints);
  if (a.storedOffset != 0)
    q = ir.CreateAdd(q, llvm::ConstantInt::get(ints, uint64_t(a.storedOffset)));
  return q;
}

const Tensor &requireConstant(LoweringContext &ctx, const Node &node, const Value *value,
                              const char *what) {
  const Tensor *tensor = ctx.constantValue(value);
  if (!tensor || !tensor->hasData())
    ctx.unsupported(node, std::string("the ") + what + " must be a constant with contents");
  return *tensor;
}

std::vector<float> constantFloats(const Tensor &tensor) {
  std::vector<float> out;
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    out.push_back(float(tensor.elementAsDouble(i)));
  return out;
}

std::vector<int32_t> constantInts(const Tensor &tensor) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    out.push_back(int32_t(tensor.elementAsInt64(i)));
  return out;
}

bool weightsNeedRowSums(const std::vector<int32_t> &zeroPoints, bool unsignedWeights) {
  for (int32_t zero : zeroPoints)
    if (zero != (unsignedWeights ? 128 : 0))
      return true;
  return zeroPoints.empty() && unsignedWeights;
}

PackedWeightBuffers packedWeightBuffers(LoweringContext &ctx, const std::string &key,
                                        const std::function<PackedIntegerWeights()> &pack) {
  std::shared_ptr<PackedIntegerWeights> packed;
  auto get = [&] {
    if (!packed)
      packed = std::make_shared<PackedIntegerWeights>(pack());
    return packed;
  };
  auto bytesOf = [](const void *data, size_t size) {
    auto bytes = std::make_shared<std::vector<uint8_t>>(size);
    std::memcpy(bytes->data(), data, size);
    return ConstantBytes(bytes);
  };
  PackedWeightBuffers buffers;
  buffers.packed = ctx.sharedConstant(
      key + ":b", [&] { return bytesOf(get()->packed.data(), get()->packed.size()); });
  buffers.columns = ctx.sharedConstant(
      key + ":columns", [&] { return bytesOf(get()->columns.data(), get()->columns.size() * 4); });
  return buffers;
}

std::vector<float> requantizeMultipliers(float aScale, const std::vector<float> &bScales,
                                         float yScale) {
  std::vector<float> out;
  for (float bScale : bScales) {
    float product = aScale * bScale;
    out.push_back(product / yScale);
  }
  return out;
}

std::optional<float> constantScale(const LoweringContext &ctx, const Value *value) {
  const Tensor *tensor = value ? ctx.constantValue(value) : nullptr;
  if (!tensor || !tensor->hasData() || tensor->dtype() != DType::F32 || tensor->numElements() != 1)
    return std::nullopt;
  return float(tensor->elementAsDouble(0));
}

} // namespace onnxc::lower
