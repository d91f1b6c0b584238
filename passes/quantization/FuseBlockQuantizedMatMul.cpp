//===- passes/quantization/FuseBlockQuantizedMatMul.cpp - int4 weight-only MatMuls ---===//
//
// Weight-only quantization, as MatMulNBits imports and as an opset-21 QDQ
// graph writes it:
//
//   %w = DequantizeLinear(%wq, %scale, [%zero]) {axis = 0, block_size}
//            wq: constant i4/u4 [K, N], scale: constant f32 [ceil(K/bs), N]
//   %y = MatMul(%a, %w)                          a: f32 [..., M, K]
//
// becomes
//
//   %y = BlockQuantizedMatMul(%a, %wq, %scale, [%zero]) {block_size}
//
// so the weights stay 4-bit: the compiled kernel reads the packed nibbles
// and dequantizes them in registers. It must run before fold-constants,
// which would fold the DequantizeLinear into f32 weights 8x the size. The
// dequantization is not removed when something else reads it.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

namespace onnxc {

using namespace match;

namespace {

bool isConstantWithData(const Value *value) {
  return value && value->isConstant() && value->constantValue().hasData();
}

/// Why the DequantizeLinear `dq` cannot be the op's weights, or nothing.
MatchStatus checkWeights(const Node &dq) {
  const Value *w = dq.operand(0), *scale = dq.operand(1);
  const Value *zero = dq.numOperands() > 2 ? dq.operand(2) : nullptr;
  if (!isConstantWithData(w) || !isFourBit(w->dtype()) || w->shape().rank() != 2)
    return Rejection{"its weights are not a constant i4/u4 matrix"};
  const int64_t block = dq.getInt("block_size", 0), axis = dq.getInt("axis", 1);
  if (block < 2)
    return Rejection{"its DequantizeLinear is not blocked (block_size < 2)"};
  if (axis != 0 && axis != -2)
    return Rejection{"its DequantizeLinear blocks run along N, not K (axis is not 0)"};
  if (dq.result(0)->dtype() != DType::F32)
    return Rejection{"its DequantizeLinear does not produce f32"};
  if (!isConstantWithData(scale) || scale->dtype() != DType::F32)
    return Rejection{"its weight scale is not a constant f32"};
  if (zero && (!isConstantWithData(zero) || zero->dtype() != w->dtype()))
    return Rejection{"its weight zero point is not a constant of the weights' type"};
  const std::vector<int64_t> &dims = w->constantValue().dims();
  const std::vector<int64_t> parameterDims = {(dims[0] + block - 1) / block, dims[1]};
  if (scale->constantValue().dims() != parameterDims ||
      (zero && zero->constantValue().dims() != parameterDims))
    return Rejection{"its scale or zero point is not [ceil(K / block_size), N]"};
  return matched();
}

class FuseBlockQuantizedMatMul : public Pass {
public:
  std::string_view name() const override { return "fuse-block-quantized-matmul"; }
  std::string_view description() const override {
    return "keep int4 weights 4-bit: a MatMul of a blocked DequantizeLinear of constant i4/u4 "
           "weights becomes one BlockQuantizedMatMul";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false;
    for (Node *matmul : graph.nodesOfKind(OpKind::MatMul)) {
      Node *dq = matmul->operand(1)->definingNode();
      // Only the MatMuls of dequantized weights are candidates; the rest are
      // not explained (that would list every MatMul).
      if (!dq || dq->kind() != OpKind::DequantizeLinear)
        continue;
      MatchStatus status = checkWeights(*dq);
      const Shape &a = matmul->operand(0)->shape();
      if (status && (matmul->operand(0)->dtype() != DType::F32 || !a.isRanked() || a.rank() < 2))
        status = Rejection{"its activation is not f32 of rank >= 2"};
      if (!status) {
        context.reject(*matmul, status.rejection().reason);
        continue;
      }
      std::vector<Value *> operands = {matmul->operand(0), dq->operand(0), dq->operand(1)};
      if (dq->numOperands() > 2 && dq->operand(2))
        operands.push_back(dq->operand(2));
      Node *fused =
          graph.createNode(OpKind::BlockQuantizedMatMul, operands, 1, matmul->name(), {}, matmul);
      fused->setAttr("block_size", Attribute(dq->getInt("block_size", 0)));
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

std::unique_ptr<Pass> createFuseBlockQuantizedMatMulPass() {
  return std::make_unique<FuseBlockQuantizedMatMul>();
}

} // namespace onnxc
