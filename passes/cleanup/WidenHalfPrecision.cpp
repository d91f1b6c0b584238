//===- passes/cleanup/WidenHalfPrecision.cpp - f16/bf16 graphs computed in f32 ===//
//
// A model whose weights and activations are f16 or bf16 (a torch export in
// half precision, onnxruntime's float16 converter, an fp16 LLM folder) runs
// on the same kernels as an f32 model: every half-precision value between
// the graph's inputs, outputs and explicit roundings becomes f32.
//
//   - a half input is widened by a Cast to f32 where it enters;
//   - a half constant becomes the f32 constant of the same values (exact:
//     f32 holds every f16 and bf16 value), which the f32 GEMM packs as is
//     and the bf16 GEMM (--precision=bf16) packs back to the same bf16 bits;
//   - a node computing half values computes them in f32;
//   - a half output is rounded by a Cast to its type where it leaves;
//   - the model's own Casts to f16/bf16 from another type (f32, an
//     integer, the other half type) stay: they are roundings the model asks
//     for, so their results are widened again by a Cast to f32 after them
//     (a pair simplify-casts keeps, as it does not round-trip exactly). A
//     Cast to the type its operand already had did nothing and still does.
//
// Nodes whose meaning depends on their element type rather than on the
// values they compute (control flow, whose subgraphs keep their types, and
// the constant-producing ops, whose value attribute is half) see half
// operands, rounded from the widened values, and their half results are
// widened after them.
//
// What this changes is only precision: the reference rounds every op's
// result to f16/bf16, onnxc rounds where the model's outputs and Casts do
// (as onnxruntime does where it runs a half op on f32 kernels): the outputs
// are the f32 model's with the same weights, rounded once.
// docs/KERNEL_ACCURACY.md states the rule and its bound.
//
//===----------------------------------------------------------------------===//
#include "ir/DType.h"
#include "passes/Pass.h"

#include <unordered_map>

namespace onnxc {

namespace {

/// The f32 tensor holding the same values as a half tensor.
Tensor widenedTensor(const Tensor &half) {
  if (!half.hasData())
    return Tensor::elided(DType::F32, half.dims()); // text IR's dense<elided>
  Tensor wide(DType::F32, half.dims());
  const uint16_t *bits = half.data<uint16_t>();
  float *out = wide.data<float>();
  bool isF16 = half.dtype() == DType::F16;
  for (int64_t i = 0, n = half.numElements(); i < n; ++i)
    out[i] = isF16 ? halfToFloat(bits[i]) : bfloat16ToFloat(bits[i]);
  return wide;
}

/// Whether `node`'s meaning is tied to its element type: its half operands
/// are read as half values and its half results keep their type.
bool isTypeBound(const Node &node) {
  switch (node.kind()) {
  case OpKind::Constant:
  case OpKind::ConstantOfShape:
  case OpKind::If:
  case OpKind::Loop:
  case OpKind::Scan:
    return true;
  default:
    return false;
  }
}

class WidenHalfPrecision : public Pass {
public:
  std::string_view name() const override { return "widen-half-precision"; }
  std::string_view description() const override {
    return "compute f16/bf16 values in f32 between the graph's inputs, outputs and the model's "
           "own Casts to f16/bf16 (half constants become f32 ones of the same values)";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("widened", 0);
    graph_ = &graph;
    halfTypeOf_.clear();
    changed_ = false;
    for (Value *input : std::vector<Value *>(graph.inputs()))
      if (isHalfFloat(input->dtype()) && input->hasUses())
        redirectUses(input, castTo(input, DType::F32));
    for (Value *constant : std::vector<Value *>(graph.constants()))
      if (isHalfFloat(constant->dtype()) && constant->hasUses())
        widenConstant(constant);
    for (Node *node : graph.topologicalOrder())
      widenNode(*node, context);
    roundOutputs();
    if (changed_)
      graph.sortTopologically();
    return changed_;
  }

private:
  Graph *graph_ = nullptr;
  // Values widened from a half type, and the type they had.
  std::unordered_map<const Value *, DType> halfTypeOf_;
  bool changed_ = false;

  /// A new Cast of `value` to `type` (placed by the final topological sort).
  Value *castTo(Value *value, DType type) {
    Node *cast = graph_->createNode(OpKind::Cast, {value}, 1, "",
                                    {value->name() + (isHalfFloat(type) ? "_half" : "_f32")});
    cast->setAttr("to", Attribute(onnxTypeCode(type)));
    cast->result()->setType({type, value->shape()});
    changed_ = true;
    return cast->result();
  }

  /// Makes every node that reads `from` (but not the node defining `to`)
  /// read `to`; graph outputs keep `from`.
  void redirectUses(Value *from, Value *to) {
    std::vector<Use> uses = from->uses();
    for (const Use &use : uses)
      if (use.user != to->definingNode())
        use.user->setOperand(use.operandIndex, to);
  }

  void widenConstant(Value *constant) {
    Value *wide = graph_->addConstant(graph_->uniqueName(constant->name() + "_f32"),
                                      widenedTensor(constant->constantValue()));
    halfTypeOf_[wide] = constant->dtype();
    redirectUses(constant, wide);
    changed_ = true;
  }

  /// The type `value` had before the pass.
  DType originalType(const Value *value) const {
    auto widened = halfTypeOf_.find(value);
    return widened == halfTypeOf_.end() ? value->dtype() : widened->second;
  }

  /// Whether `node` is a Cast or CastLike to a half type that its operand
  /// did not have: a rounding the model asks for. (A Cast to the type its
  /// operand had was a no-op, as the converters write them around ops they
  /// keep in half; it now reads the widened value like any other node.)
  bool roundsToHalf(const Node &node) const {
    if (node.kind() != OpKind::Cast && node.kind() != OpKind::CastLike)
      return false;
    DType target = node.result(0)->dtype();
    return isHalfFloat(target) && originalType(node.operand(0)) != target;
  }

  void widenNode(Node &node, PassContext &context) {
    // A rounding CastLike takes its type from its second operand, which
    // must then be half again (and so is x, rounded as the CastLike would).
    bool typeBound = isTypeBound(node);
    bool keepsHalf = typeBound || roundsToHalf(node);
    if (typeBound || (keepsHalf && node.kind() == OpKind::CastLike))
      for (size_t i = 0; i < node.numOperands(); ++i) {
        Value *operand = node.operand(i);
        auto widened = operand ? halfTypeOf_.find(operand) : halfTypeOf_.end();
        if (widened != halfTypeOf_.end())
          node.setOperand(i, castTo(operand, widened->second));
      }
    for (Value *result : node.results()) {
      if (!isHalfFloat(result->dtype()))
        continue;
      if (keepsHalf) {
        if (result->hasUses())
          redirectUses(result, castTo(result, DType::F32));
        continue;
      }
      halfTypeOf_[result] = result->dtype();
      result->setDType(DType::F32);
      if (node.kind() == OpKind::Cast) // a no-op Cast stays one, now to f32
        node.setAttr("to", Attribute(onnxTypeCode(DType::F32)));
      context.count("widened");
      changed_ = true;
    }
  }

  /// Graph outputs that were widened are rounded back to their type.
  void roundOutputs() {
    std::unordered_map<Value *, Value *> rounded;
    for (size_t i = 0; i < graph_->outputs().size(); ++i) {
      Value *value = graph_->outputs()[i].value;
      auto widened = halfTypeOf_.find(value);
      if (widened == halfTypeOf_.end())
        continue;
      Value *&half = rounded[value];
      if (!half)
        half = castTo(value, widened->second);
      graph_->setOutputValue(i, half);
    }
  }
};

} // namespace

std::unique_ptr<Pass> createWidenHalfPrecisionPass() {
  return std::make_unique<WidenHalfPrecision>();
}

} // namespace onnxc
