//===- passes/quantization/FuseStaticQuantizedMatMul.cpp - QDQ graphs' MatMuls and Gemms ---===//
//
// A QDQ graph (onnxruntime's `quantize_static`, a QAT export) writes each
// quantized MatMul or Gemm as
//
//   %q   = QuantizeLinear(%x, %s, %z)          s, z: constant scalars
//   %xq  = DequantizeLinear(%q, %s, %z)        the same s and z
//   %wq  = DequantizeLinear(%w, %ws[, %wz])    w: constant i8/u8 [K, N];
//                                              ws, wz: [] or [N] (axis 1)
//   %y   = MatMul(%xq, %wq)
//      or  Gemm(%xq, %wq[, %c]) {transB, alpha, beta}
//
// which becomes
//
//   %y = QuantizedMatMul(%x, %s, %z, %w, %ws[, %wz][, %c]) [{transpose_w = 1}]
//
// computed on the integer GEMM: the same quantized values, their products
// summed exactly in s32 and scaled once (the unfused graph rounds each
// dequantized operand to f32 first; the two differ by f32 rounding, as
// onnxruntime's own QDQ fusion does). Gemm's transB = 1 gives the weights as
// [N, K], quantized per tensor or along axis 0, and sets transpose_w; alpha
// multiplies the weight scale (a new constant); C of shape [N] becomes the
// bias when beta = 1 (quantize_static folds beta into its quantized C), any
// other C is added after, times beta. transA = 1 is left alone.
//
// The activation may also be quantized at run time, DequantizeLinear of a
// DynamicQuantizeLinear's three results (the dynamic QDQ form): that makes a
// DynamicQuantizedMatMul(%x, %w, %ws[, %wz][, %c]) instead.
//
// The QuantizeLinear -> DequantizeLinear pair after the product (the output's
// fake quantization) and everything between quantized products stay as they
// are, in f32. It must run before fold-constants, which would fold the
// weights' DequantizeLinear into an f32 constant; the pipeline runs it first
// at -O2.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/quantization/QdqMatch.h"

namespace onnxc {

using namespace match;

namespace {

struct Match {
  QuantizedActivation activation;
  QuantizedWeights weights;
  bool transposed = false;
  int64_t columns = 0;
  double alpha = 1, beta = 1;
  Value *c = nullptr;
};

/// Gemm's attributes and C into `m`, or why the Gemm cannot be fused.
MatchStatus matchGemm(const Node &gemm, Match &m) {
  if (gemm.getInt("transA", 0) != 0)
    return Rejection{"transA = 1 (the activation transposed) is not fused"};
  m.transposed = gemm.getInt("transB", 0) != 0;
  m.alpha = gemm.getFloat("alpha", 1.0f);
  m.beta = gemm.getFloat("beta", 1.0f);
  m.c = gemm.operand(2);
  if (m.c && m.c->dtype() != DType::F32)
    return Rejection{"its C is not f32"};
  return matched();
}

/// The quantized product MatMul or Gemm `node` computes, or why it is none.
MatchResult<Match> matchProduct(const Node &node) {
  Match m;
  if (node.kind() == OpKind::Gemm)
    if (MatchStatus gemm = matchGemm(node, m); !gemm)
      return gemm.rejection();
  MatchResult<QuantizedActivation> activation = matchQuantizedActivation(node.operand(0), true);
  if (!activation)
    return activation.rejection();
  m.activation = *activation;
  MatchResult<QuantizedWeights> weights =
      matchQuantizedWeights(node.operand(1), 2, m.transposed ? 0 : 1,
                            m.transposed ? "[N, K] matrix (transB = 1)" : "[K, N] matrix");
  if (!weights)
    return weights.rejection();
  m.weights = *weights;
  const Shape &a = node.operand(0)->shape();
  if (!a.isRanked() || a.rank() < 2)
    return Rejection{"its A operand is not of rank >= 2"};
  m.columns = *m.weights.weights->shape()[m.transposed ? 0 : 1].constant();
  return m;
}

/// The weight scale times alpha, as a new constant (the scale is shared).
Value *scaledWeightScale(Graph &graph, Value *scale, double alpha) {
  const Tensor &source = scale->constantValue();
  Tensor scaled(DType::F32, source.dims());
  for (int64_t i = 0; i < source.numElements(); ++i)
    scaled.data<float>()[i] = float(source.data<float>()[i] * float(alpha));
  return graph.addConstant(graph.uniqueName(scale->name() + "_alpha"), std::move(scaled));
}

/// Whether Gemm's C can be the fused op's bias: f32 [N], beta = 1.
bool isColumnBias(const Match &m) {
  const Shape &shape = m.c->shape();
  return m.beta == 1 && shape.isRanked() && shape.rank() == 1 && shape[0] == Dim(m.columns);
}

/// Replaces `product` by the fused op (plus C's Add when C is not a bias).
void rewrite(Graph &graph, Node *product, const Match &m) {
  const QuantizedWeights &w = m.weights;
  Value *scale = m.alpha == 1 ? w.scale : scaledWeightScale(graph, w.scale, m.alpha);
  Value *bias = m.c && isColumnBias(m) ? m.c : nullptr;
  std::vector<Value *> operands = {m.activation.x};
  if (!m.activation.dynamic) {
    operands.push_back(m.activation.scale);
    operands.push_back(m.activation.zero);
  }
  operands.insert(operands.end(), {w.weights, scale});
  if (w.zero || bias)
    operands.push_back(w.zero); // null: no zero point, a bias follows
  if (bias)
    operands.push_back(bias);
  OpKind kind = m.activation.dynamic ? OpKind::DynamicQuantizedMatMul : OpKind::QuantizedMatMul;
  Node *fused = graph.createNode(kind, operands, 1, product->name(), {}, product);
  if (m.transposed)
    fused->setAttr("transpose_w", Attribute(int64_t(1)));
  Value *y = product->result(0);
  std::string yName = y->name();
  Value *result = fused->result(0);
  result->setType(y->type());
  if (m.c && !bias) {
    Value *c = m.c;
    if (m.beta != 1) {
      Value *betaValue = graph.addConstant(graph.uniqueName(yName + "_beta"),
                                           Tensor::scalar<float>(float(m.beta)));
      Node *mul =
          graph.createNode(OpKind::Mul, {c, betaValue}, 1, product->name() + "/beta", {}, product);
      mul->result(0)->setType(c->type());
      c = mul->result(0);
    }
    Node *add = graph.createNode(OpKind::Add, {fused->result(0), c}, 1, product->name() + "/C", {},
                                 product);
    add->result(0)->setType(y->type());
    result = add->result(0);
  }
  graph.replaceAllUsesWith(y, result);
  graph.eraseNode(product);
  graph.renameValue(result, yName);
}

class FuseStaticQuantizedMatMul : public Pass {
public:
  std::string_view name() const override { return "fuse-static-quantized-matmul"; }
  std::string_view description() const override {
    return "fold QDQ graphs' QuantizeLinear (or DynamicQuantizeLinear) -> DequantizeLinear -> "
           "MatMul/Gemm <- DequantizeLinear (constant weights) into one QuantizedMatMul "
           "(DynamicQuantizedMatMul)";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false;
    std::vector<Node *> candidates = graph.nodesOfKind(OpKind::MatMul);
    for (Node *gemm : graph.nodesOfKind(OpKind::Gemm))
      candidates.push_back(gemm);
    for (Node *product : candidates) {
      MatchResult<Match> m = matchProduct(*product);
      if (!m) {
        // Only products that read a dequantized value are candidates.
        if (definedBy(product->operand(0), OpKind::DequantizeLinear) ||
            definedBy(product->operand(1), OpKind::DequantizeLinear))
          context.reject(*product, m.rejection().reason);
        continue;
      }
      rewrite(graph, product, *m);
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
