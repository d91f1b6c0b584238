//===- passes/quantization/ExpandFakeQuantize.cpp - QDQ pairs as f32 arithmetic ---===//
//
// Between the quantized GEMMs of a QDQ graph every activation passes through
//
//   %q = QuantizeLinear(%x, %s, %z)       per tensor: s f32, z u8/i8
//   %y = DequantizeLinear(%q, %s, %z)     the same s and z
//
// which rounds %x to the quantization grid ("fake quantization"). Written
// as f32 arithmetic it joins the elementwise chains around it, which codegen
// fuses into one vectorized loop, instead of two passes over memory through
// an 8-bit tensor:
//
//   t  = Clip(x / s, -2^22, 2^22)         saturates anyway beyond the range
//   r  = (t + 1.5 * 2^23) - 1.5 * 2^23    round half to even, exact for |t| <= 2^22
//   q  = Clip(r + z, lo, hi)              [lo, hi] the range of z's type
//   y  = Where(IsNaN(x), 0, (q - z) * s)  QuantizeLinear takes NaN to z
//
// Bit for bit the pair's result: x / s rounds in f32 as QuantizeLinear's
// division does, every later step up to the product is exact on integers
// below 2^24, and (q - z) * s rounds once in f32 as DequantizeLinear's does.
// It runs after fuse-static-quantized-matmul, which reads the pairs before
// the MatMuls it fuses.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

namespace onnxc {

using namespace match;

namespace {

/// Whether `dequantize` and the `quantize` it reads are a pair this pass
/// expands, or why not.
MatchStatus matchPair(const Node &dequantize, const Node &quantize) {
  if (!isPlainQuantizeOp(quantize) || !isPlainQuantizeOp(dequantize))
    return Rejection{"a block size or an output type"};
  const Value *scale = quantize.operand(1), *zero = quantize.operand(2);
  if (!zero || !sameScalar(scale, dequantize.operand(1)) ||
      !sameScalar(zero, dequantize.operand(2)))
    return Rejection{"not one per-tensor scale and explicit zero point shared by the pair"};
  if (scale->dtype() != DType::F32 || (zero->dtype() != DType::U8 && zero->dtype() != DType::I8) ||
      quantize.operand(0)->dtype() != DType::F32)
    return Rejection{"not f32 quantized to u8 or i8"};
  if (!(*scalarConstant(scale) > 0))
    return Rejection{"the scale is not positive"};
  return matched();
}

class ExpandFakeQuantize : public Pass {
public:
  std::string_view name() const override { return "expand-fake-quantize"; }
  std::string_view description() const override {
    return "write a per-tensor QuantizeLinear -> DequantizeLinear pair on f32 as the f32 "
           "arithmetic it computes, for elementwise fusion";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("expanded", 0);
    bool changed = false;
    for (Node *dequantize : graph.nodesOfKind(OpKind::DequantizeLinear)) {
      const Node *quantize = definedBy(dequantize->operand(0), OpKind::QuantizeLinear);
      if (!quantize)
        continue;
      if (MatchStatus pair = matchPair(*dequantize, *quantize); !pair) {
        context.reject(*dequantize, pair.rejection().reason);
        continue;
      }
      Value *x = quantize->operand(0);
      const TensorType &type = dequantize->result(0)->type();
      bool isSigned = quantize->operand(2)->dtype() == DType::I8;
      float scale = float(*scalarConstant(quantize->operand(1)));
      float zero = float(*scalarConstant(quantize->operand(2)));
      std::string base = dequantize->result(0)->name() + ".fq";
      auto constant = [&](float v) {
        return graph.addConstant(graph.uniqueName(base + ".c"), Tensor::scalar<float>(v));
      };
      auto emit = [&](OpKind kind, std::vector<Value *> operands, DType dtype = DType::F32) {
        Node *node = graph.createNode(kind, operands, 1, dequantize->name(), {}, dequantize);
        node->result(0)->setType({dtype, type.shape});
        return node->result(0);
      };
      const float magic = 12582912.0f, limit = 4194304.0f; // 1.5 * 2^23, 2^22
      Value *s = constant(scale), *z = constant(zero);
      Value *t = emit(OpKind::Clip, {emit(OpKind::Div, {x, s}), constant(-limit), constant(limit)});
      Value *m = constant(magic);
      Value *r = emit(OpKind::Sub, {emit(OpKind::Add, {t, m}), m});
      Value *q = emit(OpKind::Clip, {emit(OpKind::Add, {r, z}), constant(isSigned ? -128.0f : 0.0f),
                                     constant(isSigned ? 127.0f : 255.0f)});
      Value *y = emit(OpKind::Mul, {emit(OpKind::Sub, {q, z}), s});
      Value *result =
          emit(OpKind::Where, {emit(OpKind::IsNaN, {x}, DType::Bool), constant(0.0f), y});
      Value *old = dequantize->result(0);
      std::string name = old->name();
      graph.replaceAllUsesWith(old, result);
      graph.eraseNode(dequantize);
      graph.renameValue(result, name);
      context.count("expanded");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createExpandFakeQuantizePass() {
  return std::make_unique<ExpandFakeQuantize>();
}

} // namespace onnxc
