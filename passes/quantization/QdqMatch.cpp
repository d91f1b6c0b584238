//===- passes/quantization/QdqMatch.cpp - The operands of a QDQ graph's quantized product ---===//
#include "passes/quantization/QdqMatch.h"

#include "passes/MatchSupport.h"

#include <string>

namespace onnxc::match {

namespace {

/// DequantizeLinear(y, scale, zero) of one DynamicQuantizeLinear's results.
MatchResult<QuantizedActivation> matchDynamicActivation(Node *dequantize, Node *quantize) {
  if (dequantize->operand(0) != quantize->result(0) ||
      dequantize->operand(1) != quantize->result(1) ||
      dequantize->operand(2) != quantize->result(2))
    return Rejection{
        "the activation's DequantizeLinear does not take its DynamicQuantizeLinear's scale and "
        "zero point"};
  if (quantize->operand(0)->dtype() != DType::F32)
    return Rejection{"the quantized activation is not f32"};
  QuantizedActivation out;
  out.x = quantize->operand(0);
  out.dynamic = true;
  return out;
}

} // namespace

MatchResult<QuantizedActivation> matchQuantizedActivation(Value *operand, bool allowDynamic) {
  Node *dequantize = definedBy(operand, OpKind::DequantizeLinear);
  if (!dequantize)
    return Rejection{"the activation is not a DequantizeLinear's result"};
  if (Node *dynamic = definedBy(dequantize->operand(0), OpKind::DynamicQuantizeLinear)) {
    if (!allowDynamic)
      return Rejection{
          "the activation is quantized at run time (DynamicQuantizeLinear), which only the "
          "matrix products take"};
    if (!isPlainQuantizeOp(*dequantize))
      return Rejection{"the activation's quantization has a block size or an output type"};
    return matchDynamicActivation(dequantize, dynamic);
  }
  Node *quantize = definedBy(dequantize->operand(0), OpKind::QuantizeLinear);
  if (!quantize)
    return Rejection{"the activation is not a QuantizeLinear -> DequantizeLinear pair"};
  if (!isPlainQuantizeOp(*quantize) || !isPlainQuantizeOp(*dequantize))
    return Rejection{"the activation's quantization has a block size or an output type"};
  Value *scale = quantize->operand(1), *zero = quantize->operand(2);
  if (!zero || !dequantize->operand(2))
    return Rejection{"the activation's zero point is implicit (explicit u8/i8 zero points only)"};
  if (!isConstantOfShape(scale, {1}, 1) || !isConstantOfShape(zero, {1}, 1) ||
      scale->dtype() != DType::F32 || (zero->dtype() != DType::U8 && zero->dtype() != DType::I8))
    return Rejection{
        "the activation is not quantized per tensor by constant f32 scale and u8/i8 zero point"};
  if (!sameScalar(scale, dequantize->operand(1)) || !sameScalar(zero, dequantize->operand(2)))
    return Rejection{
        "the activation's QuantizeLinear and DequantizeLinear differ in scale or zero point"};
  if (!(*scalarConstant(scale) > 0))
    return Rejection{"the activation scale is not positive"};
  if (quantize->operand(0)->dtype() != DType::F32)
    return Rejection{"the quantized activation is not f32"};
  QuantizedActivation out;
  out.x = quantize->operand(0);
  out.scale = scale;
  out.zero = zero;
  out.dynamic = false;
  return out;
}

MatchResult<QuantizedWeights> matchQuantizedWeights(Value *operand, size_t rank,
                                                    int64_t channelAxis, const char *what) {
  Node *dequantize = definedBy(operand, OpKind::DequantizeLinear);
  if (!dequantize)
    return Rejection{"the weights are not a DequantizeLinear's result"};
  if (!isPlainQuantizeOp(*dequantize))
    return Rejection{"the weights' DequantizeLinear has a block size or an output type"};
  Value *w = dequantize->operand(0), *scale = dequantize->operand(1),
        *zero = dequantize->operand(2);
  const Shape &shape = w->shape();
  bool rankFits = shape.isRanked() && (rank ? shape.rank() == rank : shape.rank() >= 3);
  if (!w->isConstant() || !w->constantValue().hasData() ||
      (w->dtype() != DType::I8 && w->dtype() != DType::U8) || !rankFits ||
      !shape[size_t(channelAxis)].constant()) {
    return Rejection::built(std::string("the weights are not a constant i8/u8 ") + what);
  }
  int64_t channels = *shape[size_t(channelAxis)].constant();
  int64_t axis = dequantize->getInt("axis", 1);
  if (axis < 0)
    axis += int64_t(shape.rank());
  bool perAxis = scale->shape().isRanked() && scale->shape().numElements() != Dim(1);
  if (perAxis && axis != channelAxis) {
    if (rank == 2 && channelAxis == 1 && axis == 0)
      return Rejection{
          "the weights are quantized per row (axis 0), which the GEMM cannot factor out"};
    return Rejection::built("the weights are quantized along axis " + std::to_string(axis) +
                            ", not their output channels (axis " + std::to_string(channelAxis) +
                            "), which the GEMM cannot factor out");
  }
  if (scale->dtype() != DType::F32 || !isConstantOfShape(scale, {1, channels}, 1))
    return Rejection{"the weight scale is not a constant f32, per tensor or per output channel"};
  if (zero && (zero->dtype() != w->dtype() ||
               !isConstantOfShape(zero, {scale->constantValue().numElements()}, 1)))
    return Rejection{
        "the weight zero point is not a constant of the weights' type shaped like the scale"};
  return QuantizedWeights{w, scale, zero};
}

} // namespace onnxc::match
