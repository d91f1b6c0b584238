//===- passes/quantization/SinkDequantize.cpp - Gather quantized tables, then dequantize ---===//
//
// A QDQ graph reads its embedding tables as
//
//   %t = DequantizeLinear(%table_q, %s, %z)     table_q: a constant [V, H] of i8/u8
//   %e = Gather(%t, %ids) {axis = 0}
//
// which dequantizes the whole table on every run (too large for
// fold-constants to materialize, and f32 four times the size if it did). A
// per-tensor DequantizeLinear commutes with Gather, so this becomes
//
//   %g = Gather(%table_q, %ids) {axis = 0}
//   %e = DequantizeLinear(%g, %s, %z)
//
// which dequantizes only the rows read: the same values, bit for bit.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

namespace onnxc {

using namespace match;

namespace {

/// One scale and (absent or) one zero point, no block size or output type.
bool isPerTensorDequantize(const Node &dequantize) {
  auto single = [](const Value *v) {
    return v && v->shape().isRanked() && v->shape().numElements() == Dim(1);
  };
  return single(dequantize.operand(1)) &&
         (!dequantize.operand(2) || single(dequantize.operand(2))) && isPlainQuantizeOp(dequantize);
}

class SinkDequantize : public Pass {
public:
  std::string_view name() const override { return "sink-dequantize"; }
  std::string_view description() const override {
    return "move a per-tensor DequantizeLinear of a table after the Gather that reads it";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("sunk", 0);
    bool changed = false;
    for (Node *gather : graph.nodesOfKind(OpKind::Gather)) {
      Node *dequantize = definedBy(gather->operand(0), OpKind::DequantizeLinear);
      if (!dequantize)
        continue;
      if (!isPerTensorDequantize(*dequantize)) {
        context.reject(*gather, "its table is dequantized per axis");
        continue;
      }
      Value *quantized = dequantize->operand(0);
      Node *moved = graph.createNode(OpKind::Gather, {quantized, gather->operand(1)}, 1,
                                     gather->name(), {}, gather);
      for (const auto &[attrName, attr] : gather->attributes())
        moved->setAttr(attrName, attr);
      Value *e = gather->result(0);
      moved->result(0)->setType({quantized->dtype(), e->shape()});
      std::vector<Value *> operands = {moved->result(0), dequantize->operand(1)};
      if (dequantize->operand(2))
        operands.push_back(dequantize->operand(2));
      Node *after =
          graph.createNode(OpKind::DequantizeLinear, operands, 1, dequantize->name(), {}, gather);
      after->result(0)->setType(e->type());
      std::string eName = e->name();
      graph.replaceAllUsesWith(e, after->result(0));
      graph.eraseNode(gather);
      graph.renameValue(after->result(0), eName);
      // The table's DequantizeLinear goes when nothing else reads it (dce).
      context.count("sunk");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createSinkDequantizePass() { return std::make_unique<SinkDequantize>(); }

} // namespace onnxc
