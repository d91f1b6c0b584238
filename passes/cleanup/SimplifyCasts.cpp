//===- passes/cleanup/SimplifyCasts.cpp - Remove Casts that change nothing ---===//
//
//   %y = Cast(%x) {to = dtype of %x}            uses of %y  ->  uses of %x
//   %y = CastLike(%x, %like), same dtypes       uses of %y  ->  uses of %x
//   %y = Cast(Cast(%x: A) {to = B}) {to = A}    uses of %y  ->  uses of %x
//                                               when B holds every value of A
//
// Exporters write such Casts around Softmax (HF GPT-2's `.type(value.dtype)`,
// LLaMA's `softmax(..., dtype=float32).to(dtype)`, T5's `.float()` ...
// `.type_as()`) for the sake of fp16 runs; in an f32 graph they are no-ops,
// and every fusion that walks through them would otherwise need its own
// exception. A round trip is removed only through a type that represents
// every value of the source exactly (f16 -> f32 -> f16, i32 -> i64 -> i32,
// bool -> anything -> bool), never through a narrower one (f32 -> f16 -> f32
// rounds).
//
//===----------------------------------------------------------------------===//
#include "ir/DType.h"
#include "passes/Pass.h"

namespace onnxc {

namespace {

class SimplifyCasts : public Pass {
public:
  std::string_view name() const override { return "simplify-casts"; }
  std::string_view description() const override {
    return "remove Casts to the type a value already has, and Cast pairs that round-trip exactly";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("removed", 0);
    bool changed = false;
    for (Node *node : graph.nodeList()) {
      if (node->kind() != OpKind::Cast && node->kind() != OpKind::CastLike)
        continue;
      Value *x = node->operand(0);
      Value *source = nullptr;
      Node *inner = x->definingNode();
      if (x->dtype() != DType::Unknown && node->result(0)->dtype() == x->dtype()) {
        source = x;
        inner = nullptr;
      } else if (inner && inner->kind() == OpKind::Cast &&
                 inner->operand(0)->dtype() == node->result(0)->dtype() &&
                 castRoundTripsExactly(inner->operand(0)->dtype(), x->dtype())) {
        source = inner->operand(0);
      } else {
        continue;
      }
      graph.replaceAllUsesWith(node->result(0), source);
      graph.eraseNode(node);
      // The inner Cast of a round trip (visited already: it comes first)
      // goes too once nothing else reads it.
      if (inner && !inner->result(0)->hasUses() && !graph.isOutput(inner->result(0)))
        graph.eraseNode(inner);
      context.count("removed");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createSimplifyCastsPass() { return std::make_unique<SimplifyCasts>(); }

} // namespace onnxc
