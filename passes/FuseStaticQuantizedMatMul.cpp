//===- passes/FuseStaticQuantizedMatMul.cpp - QDQ graphs' MatMuls ----------===//
//
// A static QDQ graph (onnxruntime's `quantize_static`, or a QAT export)
// writes each quantized MatMul as
//
//   %q   = QuantizeLinear(%x, %s, %z)          s, z: constant scalars
//   %xq  = DequantizeLinear(%q, %s, %z)        the same s and z
//   %wq  = DequantizeLinear(%w, %ws[, %wz])    w: constant i8/u8 [K, N];
//                                              ws, wz: [] or [N] (axis 1)
//   %y   = MatMul(%xq, %wq)
//
// which becomes
//
//   %y = QuantizedMatMul(%x, %s, %z, %w, %ws[, %wz])
//
// computed on the integer GEMM: the same quantized values, their products
// summed exactly in s32 and scaled once (the unfused graph rounds each
// dequantized operand to f32 first; the two differ by f32 rounding, as
// onnxruntime's own QDQ fusion does). The QuantizeLinear -> DequantizeLinear
// pair after the MatMul (the output's fake quantization) and everything
// between quantized MatMuls stay as they are, in f32.
//
// It must run before fold-constants, which would fold the weights'
// DequantizeLinear into an f32 constant; the pipeline runs it first at -O2.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

namespace onnxc {

using namespace match;

namespace {

struct Match {
  Value *x = nullptr, *scale = nullptr, *zero = nullptr; // the activation's
  Value *weights = nullptr, *weightScale = nullptr, *weightZero = nullptr;
};

/// The activation side: DequantizeLinear(QuantizeLinear(x, s, z), s, z).
const char *matchActivation(Value *operand, Match &m) {
  Node *dequantize = definedBy(operand, OpKind::DequantizeLinear);
  if (!dequantize)
    return "its A operand is not a DequantizeLinear's result";
  Node *quantize = definedBy(dequantize->operand(0), OpKind::QuantizeLinear);
  if (!quantize)
    return "its A operand is not a QuantizeLinear -> DequantizeLinear pair";
  if (!isPlainQuantizeOp(*quantize) || !isPlainQuantizeOp(*dequantize))
    return "the activation's quantization has a block size or an output type";
  Value *scale = quantize->operand(1), *zero = quantize->operand(2);
  if (!zero || !dequantize->operand(2))
    return "the activation's zero point is implicit (explicit u8/i8 zero points only)";
  if (!isConstantOfShape(scale, {1}, 1) || !isConstantOfShape(zero, {1}, 1) ||
      scale->dtype() != DType::F32 || (zero->dtype() != DType::U8 && zero->dtype() != DType::I8))
    return "the activation is not quantized per tensor by constant f32 scale and u8/i8 zero point";
  if (!sameScalar(scale, dequantize->operand(1)) || !sameScalar(zero, dequantize->operand(2)))
    return "the activation's QuantizeLinear and DequantizeLinear differ in scale or zero point";
  if (!(*scalarConstant(scale) > 0))
    return "the activation scale is not positive";
  if (quantize->operand(0)->dtype() != DType::F32)
    return "the quantized activation is not f32";
  m.x = quantize->operand(0);
  m.scale = scale;
  m.zero = zero;
  return nullptr;
}

/// The weight side: DequantizeLinear(w, ws[, wz]) of a constant [K, N]
/// matrix, per tensor or per column (axis 1).
const char *matchWeights(Value *operand, Match &m) {
  Node *dequantize = definedBy(operand, OpKind::DequantizeLinear);
  if (!dequantize)
    return "its B operand is not a DequantizeLinear's result";
  if (!isPlainQuantizeOp(*dequantize))
    return "the weights' DequantizeLinear has a block size or an output type";
  Value *w = dequantize->operand(0), *scale = dequantize->operand(1),
        *zero = dequantize->operand(2);
  const Shape &shape = w->shape();
  if (!w->isConstant() || !w->constantValue().hasData() ||
      (w->dtype() != DType::I8 && w->dtype() != DType::U8) || !shape.isRanked() ||
      shape.rank() != 2 || !shape[1].constant())
    return "the weights are not a constant i8/u8 [K, N] matrix";
  int64_t columns = *shape[1].constant();
  int64_t axis = dequantize->getInt("axis", 1);
  bool perAxis = scale->shape().isRanked() && scale->shape().numElements() != Dim(1);
  if (perAxis && axis != 1 && axis != -1)
    return "the weights are quantized per row (axis 0), which the GEMM cannot factor out";
  if (scale->dtype() != DType::F32 || !isConstantOfShape(scale, {1, columns}, 1))
    return "the weight scale is not a constant f32, per tensor or per column";
  if (zero && (zero->dtype() != w->dtype() ||
               !isConstantOfShape(zero, {scale->constantValue().numElements()}, 1)))
    return "the weight zero point is not a constant of the weights' type shaped like the scale";
  m.weights = w;
  m.weightScale = scale;
  m.weightZero = zero;
  return nullptr;
}

class FuseStaticQuantizedMatMul : public Pass {
public:
  std::string_view name() const override { return "fuse-static-quantized-matmul"; }
  std::string_view description() const override {
    return "fold QDQ graphs' QuantizeLinear -> DequantizeLinear -> MatMul <- DequantizeLinear "
           "(constant weights) into one QuantizedMatMul";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false;
    for (Node *matmul : graph.nodesOfKind(OpKind::MatMul)) {
      Match m;
      const char *reason = matchActivation(matmul->operand(0), m);
      if (!reason)
        reason = matchWeights(matmul->operand(1), m);
      const Shape &a = matmul->operand(0)->shape();
      if (!reason && (!a.isRanked() || a.rank() < 2))
        reason = "its A operand is not of rank >= 2";
      if (reason) {
        // Only MatMuls that read a dequantized value are candidates.
        if (definedBy(matmul->operand(0), OpKind::DequantizeLinear) ||
            definedBy(matmul->operand(1), OpKind::DequantizeLinear))
          context.reject(*matmul, reason);
        continue;
      }
      std::vector<Value *> operands = {m.x, m.scale, m.zero, m.weights, m.weightScale};
      if (m.weightZero)
        operands.push_back(m.weightZero);
      Node *fused =
          graph.createNode(OpKind::QuantizedMatMul, operands, 1, matmul->name(), {}, matmul);
      Value *y = matmul->result(0);
      std::string yName = y->name();
      fused->result(0)->setType(y->type());
      graph.replaceAllUsesWith(y, fused->result(0));
      graph.eraseNode(matmul);
      graph.renameValue(fused->result(0), yName);
      context.count("fused");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseStaticQuantizedMatMulPass() {
  return std::make_unique<FuseStaticQuantizedMatMul>();
}

} // namespace onnxc
