//===- passes/quantization/FuseDynamicQuantizedMatMul.cpp - quantize_dynamic's MatMuls ---===//
//
// onnxruntime's `quantize_dynamic` turns every MatMul with constant weights
// into
//
//   %q, %a_scale, %a_zero = DynamicQuantizeLinear(%a)
//   %acc   = MatMulInteger(%q, %w, %a_zero, [%w_zero])   w: constant i8/u8 [K, N]
//   %accf  = Cast(%acc) {to = f32}
//   %scale = Mul(%a_scale, %w_scale)                     w_scale: constant [] or [N]
//   %y     = Mul(%accf, %scale)
//  [%y'    = Add(%y, %bias)]                             bias: constant f32 [N]
//
// (Mul and Add operands in either order), which becomes one
//
//   %y = DynamicQuantizedMatMul(%a, %w, %w_scale, [%w_zero], [%bias])
//
// whose semantics are exactly these steps (docs/IR.md), compiled onto the
// integer GEMM with the dequantization in its store. Several MatMulIntegers
// may share one DynamicQuantizeLinear (Q, K and V of a layer): each fused op
// quantizes its own copy of the activation, which gives the same bytes.
// Everything around stays f32, as in onnxruntime.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

namespace onnxc {

using namespace match;

namespace {

/// A per-tensor ([] / [1]) or per-column ([N]) constant.
bool isScaleLike(const Value *value, int64_t columns) {
  return isConstantOfShape(value, {1, columns}, 1);
}

struct Chain {
  Node *quantize = nullptr, *matmul = nullptr, *cast = nullptr, *scaleMul = nullptr,
       *outputMul = nullptr, *biasAdd = nullptr;
  Value *weightScale = nullptr, *bias = nullptr;
};

/// The chain the MatMulInteger `matmul` starts, or why it is not the whole
/// pattern.
MatchResult<Chain> matchChain(const Graph &graph, Node *matmul) {
  Chain chain;
  chain.matmul = matmul;
  Value *q = matmul->operand(0), *w = matmul->operand(1);
  Node *quantize = q->definingNode();
  if (!quantize || quantize->kind() != OpKind::DynamicQuantizeLinear || q != quantize->result(0))
    return Rejection{"its A operand is not a DynamicQuantizeLinear's output"};
  if (matmul->numOperands() < 3 || matmul->operand(2) != quantize->result(2))
    return Rejection{"its A zero point is not the DynamicQuantizeLinear's"};
  if (quantize->operand(0)->dtype() != DType::F32)
    return Rejection{"the quantized activation is not f32"};
  chain.quantize = quantize;
  const Shape &ws = w->shape();
  if (!w->isConstant() || (w->dtype() != DType::I8 && w->dtype() != DType::U8) || !ws.isRanked() ||
      ws.rank() != 2 || !ws[1].constant())
    return Rejection{"its weights are not a constant i8/u8 [K, N] matrix"};
  int64_t columns = *ws[1].constant();
  Value *weightZero = matmul->numOperands() > 3 ? matmul->operand(3) : nullptr;
  if (weightZero && (!isScaleLike(weightZero, columns) || weightZero->dtype() != w->dtype()))
    return Rejection{
        "its weight zero point is not a constant of the weights' type, per tensor or per column"};
  chain.cast = soleUser(graph, matmul->result(0));
  if (!chain.cast || chain.cast->kind() != OpKind::Cast ||
      chain.cast->result(0)->dtype() != DType::F32)
    return Rejection{"its i32 result is not only cast to f32"};
  chain.outputMul = soleUser(graph, chain.cast->result(0));
  Value *scale = chain.outputMul
                     ? otherOperand(*chain.outputMul, OpKind::Mul, chain.cast->result(0))
                     : nullptr;
  if (!scale)
    return Rejection{"the cast result is not only multiplied by a scale"};
  chain.scaleMul = scale->definingNode();
  chain.weightScale =
      chain.scaleMul ? otherOperand(*chain.scaleMul, OpKind::Mul, quantize->result(1)) : nullptr;
  if (!chain.weightScale || scale->numUses() != 1 || graph.isOutput(scale))
    return Rejection{
        "the scale is not the activation's scale times a weight scale (and nothing else)"};
  if (chain.weightScale->dtype() != DType::F32 || !isScaleLike(chain.weightScale, columns))
    return Rejection{"the weight scale is not a constant f32, per tensor or per column"};
  if (weightZero && !provablySameShape(weightZero->shape(), chain.weightScale->shape()))
    return Rejection{"the weight zero point is not shaped like the weight scale"};
  // A bias Add that the op can take: a constant f32 [N] on the other side.
  if (Node *add = soleUser(graph, chain.outputMul->result(0))) {
    Value *bias = otherOperand(*add, OpKind::Add, chain.outputMul->result(0));
    if (bias && bias->dtype() == DType::F32 && isConstantOfShape(bias, {columns}, 1) &&
        bias->shape().rank() == 1) {
      chain.biasAdd = add;
      chain.bias = bias;
    }
  }
  return chain;
}

class FuseDynamicQuantizedMatMul : public Pass {
public:
  std::string_view name() const override { return "fuse-dynamic-quantized-matmul"; }
  std::string_view description() const override {
    return "fold quantize_dynamic's DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul "
           "[-> Add bias] chains into one DynamicQuantizedMatMul";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false;
    // Candidates first: the rewrite erases nodes still ahead in the list.
    for (Node *matmul : graph.nodesOfKind(OpKind::MatMulInteger)) {
      MatchResult<Chain> matchedChain = matchChain(graph, matmul);
      if (!matchedChain) {
        context.reject(*matmul, matchedChain.rejection().reason);
        continue;
      }
      const Chain &chain = *matchedChain;
      Node *last = chain.biasAdd ? chain.biasAdd : chain.outputMul;
      std::vector<Value *> operands = {chain.quantize->operand(0), matmul->operand(1),
                                       chain.weightScale};
      Value *weightZero = matmul->numOperands() > 3 ? matmul->operand(3) : nullptr;
      if (weightZero || chain.bias)
        operands.push_back(weightZero); // null: no zero point, a bias follows
      if (chain.bias)
        operands.push_back(chain.bias);
      Node *fused =
          graph.createNode(OpKind::DynamicQuantizedMatMul, operands, 1, last->name(), {}, last);
      Value *y = last->result(0);
      std::string yName = y->name();
      fused->result(0)->setType(y->type());
      graph.replaceAllUsesWith(y, fused->result(0));
      for (Node *dead : {chain.biasAdd, chain.outputMul, chain.scaleMul, chain.cast, matmul})
        if (dead)
          graph.eraseNode(dead);
      graph.renameValue(fused->result(0), yName);
      context.count("fused");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseDynamicQuantizedMatMulPass() {
  return std::make_unique<FuseDynamicQuantizedMatMul>();
}

} // namespace onnxc
