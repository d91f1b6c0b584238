//===- codegen/lower/controlflow/LoopLowering.cpp - Loop and Scan in codegen -===//
//
// A Loop or Scan becomes a repeated run of its body's steps inside the
// parent's flat step list (the steps: LoopSteps.h):
//
//   copy initial values into the carried state buffers
//   enter       i = 0, cond = the initial condition; none to run -> after
//   body        lowered in a LoweringContext of its own (SubgraphLowering.h):
//               iter_num reads i, cond reads the condition buffer, carried
//               inputs the state buffers, captures the outer buffers
//   end         each output to where the next iteration or the result
//               wants it (LoopIterationEnd.h)
//   back-edge   i += 1; while i < M and cond -> body
//
// No buffer is allocated per iteration: the state buffers are the Loop's
// results themselves, the body's buffers are planned once by the arena like
// straight-line code, and buffers read by every iteration (captures, state,
// results, M) are kept alive from the entry to the back-edge. Scan outputs
// are written in place into their row of the result (or copied there when
// a row is not one contiguous run); Scan's inputs are read in place at
// slice i (or copied out per iteration, likewise), in either direction.
//
// Refused with one line naming the node, before any step is emitted
// (checkLoop): body ops without a kernel, a loop-carried value whose shape
// changes between iterations (a torch.cat that grows), body values whose
// size does not follow from the inputs' dims, and a Loop's scan outputs
// when the number of iterations is only known once the loop has run (a
// condition the body computes, or M not known from the inputs' dims).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/controlflow/LoopLowering.h"

#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/controlflow/LoopIterationEnd.h"
#include "codegen/lower/controlflow/LoopSteps.h"
#include "codegen/lower/controlflow/SubgraphLowering.h"
#include "ir/Error.h"
#include "ir/Subgraph.h"

namespace onnxc::lower {

namespace {

/// Where a Loop's and a Scan's operands, body inputs and outputs line up
/// (ir/Subgraph.h).
struct LoopShape {
  size_t carried = 0;
  size_t firstCarriedOperand = 0, firstCarriedInput = 0, firstCarriedOutput = 0;
};

LoopShape loopShape(const Node &node) {
  if (node.kind() == OpKind::Loop)
    return {loopCarriedCount(node), 2, 2, 1};
  return {scanStateCount(node), 0, 0, 0};
}

int64_t axisAttribute(const Node &node, const char *name, size_t i, int64_t rank) {
  std::vector<int64_t> axes = node.getInts(name);
  int64_t axis = i < axes.size() ? axes[i] : 0;
  return axis < 0 ? axis + rank : axis;
}

bool reversedAttribute(const Node &node, const char *name, size_t i) {
  std::vector<int64_t> directions = node.getInts(name);
  return i < directions.size() && directions[i] != 0;
}

[[noreturn]] void refuse(const Node &node, const std::string &reason) {
  fail(node.describe(), ": cannot compile ", node.opName(), ": ", reason, kReferenceFallback);
}

bool sizable(const Shape &shape, const std::set<std::string> &bound) {
  if (hasUnknownDim(shape))
    return false;
  for (const Dim &dim : shape.dims())
    for (const std::string &symbol : dim.symbols())
      if (!bound.count(symbol))
        return false;
  return true;
}

/// The Loop's scan outputs are sized before it runs: their length must be
/// a dim of the inputs, which shape inference gives only for M known from
/// the inputs' dims and a condition that stays true.
void checkResults(const Node &node, const std::set<std::string> &bound, size_t carried) {
  for (size_t r = 0; r < node.numResults(); ++r) {
    const Value *result = node.result(r);
    if (sizable(result->shape(), bound))
      continue;
    if (node.kind() == OpKind::Loop && r >= carried && result->shape().isRanked() &&
        result->shape().rank() >= 1) {
      Shape row(std::vector<Dim>(result->shape().dims().begin() + 1, result->shape().dims().end()));
      if (sizable(row, bound))
        refuse(node, "its scan output '" + result->name() + "' " + result->type().str() +
                         " has one row per iteration, and the number of iterations is only "
                         "known once the loop has run (the body computes its condition, or M "
                         "does not follow from the inputs' dims)");
    }
    refuse(node, "result '" + result->name() + "' is " + result->type().str() +
                     ", which does not follow from the inputs' dims");
  }
}

} // namespace

void checkLoop(const Node &node, const std::set<std::string> &bound) {
  const Graph &body = *node.subgraph("body");
  std::vector<Node *> order = body.topologicalOrder();
  if (std::optional<std::string> missing = opsWithoutKernel(order))
    refuse(node, "its body has op " + *missing + ", for which codegen has no kernel");
  checkControlFlow(order, bound);
  LoopShape shape = loopShape(node);
  for (size_t k = 0; k < shape.carried; ++k) {
    const TensorType &initial = node.operand(shape.firstCarriedOperand + k)->type();
    const Value *input = body.inputs()[shape.firstCarriedInput + k];
    const TensorType &returned = body.outputs()[shape.firstCarriedOutput + k].value->type();
    if (input->type() != initial || returned != initial)
      refuse(node, "loop-carried value '" + input->name() +
                       "' may change shape between iterations " + "(it enters as " + initial.str() +
                       " and the body returns " + returned.str() +
                       "); codegen needs one shape for every iteration");
  }
  checkResults(node, bound, shape.carried);
  if (std::optional<std::string> value = unsizableValue(body, bound))
    refuse(node, "its body computes " + *value +
                     ", whose size changes between iterations or does not follow from the "
                     "inputs' dims");
  if (node.kind() == OpKind::Scan)
    for (size_t j = 0; j < scanInputCount(node); ++j)
      if (!node.operand(shape.carried + j)->shape().isRanked())
        refuse(node, "scan input " + std::to_string(j) + " has no known rank");
}

namespace {

/// What the lowering of one Loop or Scan hands to lowerIterations.
struct LoopPlan {
  LoopControl control;
  /// Per body input: its buffer (state, slice, capture, i, cond).
  std::vector<int32_t> inputBuffers;
  /// Per body output: where it goes.
  std::vector<BodyOutput> outputs;
  /// Scan inputs read in place (placeholder = the body input's buffer).
  std::vector<SliceWindow> inputWindows;
  /// Scan inputs copied out per iteration: stacked, slice, layout.
  struct Unstack {
    int32_t stacked, slice;
    StackLayout layout;
    std::string what;
  };
  std::vector<Unstack> unstacks;
  /// Buffers that hold one iteration's data only.
  std::set<int32_t> iterationLocal;
};

std::string valueLabel(const char *what, const Value *value) {
  return std::string(what) + " '" + value->name() + "'";
}

int32_t addScalarBuffer(LoweringContext &ctx, DType dtype) {
  PlanBuffer buffer;
  buffer.sizeBytes = Dim(int64_t(dtypeSize(dtype)));
  return ctx.addBuffer(std::move(buffer));
}

/// The carried values' state buffers: the results themselves, filled with
/// the initial values before the loop starts.
void addCarriedState(LoweringContext &ctx, const Node &node, LoopPlan &plan, const Graph &body) {
  LoopShape shape = loopShape(node);
  for (size_t k = 0; k < shape.carried; ++k) {
    const Value *result = node.result(k);
    int32_t state = ctx.bufferOf(result);
    ctx.copyBuffer(ctx.bufferOf(node.operand(shape.firstCarriedOperand + k)), state,
                   byteSize(result), valueLabel("initial", result));
    plan.inputBuffers[shape.firstCarriedInput + k] = state;
    const Value *returned = body.outputs()[shape.firstCarriedOutput + k].value;
    plan.outputs[shape.firstCarriedOutput + k] = {
        returned, state, -1, {}, valueLabel("carry", result)};
  }
}

void bindCaptures(LoweringContext &ctx, const Node &node, LoopPlan &plan) {
  size_t captures = numCaptures(node);
  size_t firstCapture = node.numOperands() - captures;
  for (size_t c = 0; c < captures; ++c)
    plan.inputBuffers[firstCapture + c] = ctx.bufferOf(node.operand(firstCapture + c));
}

/// Runs the body between the entry and the back-edge (see the banner).
void lowerIterations(LoweringContext &ctx, const Node &node, LoopPlan &plan) {
  const Graph &body = *node.subgraph("body");
  LoweringContext inner(body, ctx.module(), ctx.plan());
  inheritTarget(inner, ctx);
  for (size_t i = 0; i < body.inputs().size(); ++i)
    inner.bindBuffer(body.inputs()[i], plan.inputBuffers[i]);
  // Outputs the body computes get buffers of their own, not Output ones
  // (they are outputs of the body, not of the model); finishIteration
  // decides where they really live.
  std::set<int32_t> outputTemps;
  for (const GraphOutput &output : body.outputs()) {
    const Value *value = output.value;
    if (value->isGraphInput() || value->isConstant() || inner.hasBuffer(value))
      continue;
    PlanBuffer temp;
    temp.sizeBytes = byteSize(value);
    int32_t buffer = ctx.addBuffer(std::move(temp));
    inner.bindBuffer(value, buffer);
    outputTemps.insert(buffer);
    plan.iterationLocal.insert(buffer);
  }

  size_t entry = addLoopEntry(ctx, node, plan.control);
  int32_t bodyBuffersStart = int32_t(ctx.plan().buffers.size());
  for (const LoopPlan::Unstack &unstack : plan.unstacks)
    addSliceCopy(ctx, unstack.what, unstack.stacked, unstack.slice, unstack.layout,
                 plan.control.iteration, /*intoStacked=*/false);
  lowerSubgraphNodes(inner, body);
  std::vector<SliceWindow> windows =
      finishIteration(ctx, inner, plan.outputs, outputTemps, entry + 1, plan.control.iteration);
  size_t backEdge = ctx.plan().steps.size();
  windows.insert(windows.end(), plan.inputWindows.begin(), plan.inputWindows.end());
  applyWindows(ctx, entry + 1, backEdge, windows, plan.control.iteration);
  addLoopBackEdge(ctx, node, plan.control, entry);
  keepAliveAcrossIterations(ctx, entry, backEdge, bodyBuffersStart, plan.iterationLocal);
}

} // namespace

void lowerLoop(LoweringContext &ctx, const Node &node) {
  const Graph &body = *node.subgraph("body");
  size_t carried = loopCarriedCount(node);
  LoopPlan plan;
  plan.inputBuffers.assign(body.inputs().size(), -1);
  plan.outputs.resize(body.outputs().size());
  LoopControl &control = plan.control;
  control.iteration = addScalarBuffer(ctx, DType::I64);
  control.condition = addScalarBuffer(ctx, DType::Bool);
  if (const Value *m = node.operand(0)) {
    addOneElementCheck(ctx, node, m, "trip count");
    control.tripCountOperand = ctx.bufferOf(m);
  }
  if (const Value *cond = node.operand(1)) {
    addOneElementCheck(ctx, node, cond, "condition");
    control.conditionOperand = ctx.bufferOf(cond);
  }
  if (node.numResults() > carried)
    control.length = node.result(carried)->shape()[0];
  plan.inputBuffers[0] = control.iteration;
  plan.inputBuffers[1] = control.condition;
  // A condition the body returns as it came in, or as a true constant,
  // stays true (the iteration runs only while it is): nothing to carry.
  const Value *conditionOut = body.outputs()[0].value;
  bool staysTrue = conditionOut == body.inputs()[1] ||
                   (conditionOut->isConstant() && conditionOut->constantValue().hasData() &&
                    conditionOut->constantValue().numElements() == 1 &&
                    conditionOut->constantValue().elementAsDouble(0) != 0);
  plan.outputs[0] = {
      conditionOut, staysTrue ? -1 : control.condition, -1, {}, "carry the condition"};
  addCarriedState(ctx, node, plan, body);
  for (size_t s = carried; s < node.numResults(); ++s) {
    const Value *result = node.result(s);
    plan.outputs[1 + s] = {body.outputs()[1 + s].value, -1, ctx.bufferOf(result),
                           stackLayout(result, 0, false), valueLabel("stack", result)};
  }
  bindCaptures(ctx, node, plan);
  lowerIterations(ctx, node, plan);
}

void lowerScan(LoweringContext &ctx, const Node &node) {
  const Graph &body = *node.subgraph("body");
  size_t states = scanStateCount(node), inputs = scanInputCount(node);
  LoopPlan plan;
  plan.inputBuffers.assign(body.inputs().size(), -1);
  plan.outputs.resize(body.outputs().size());
  LoopControl &control = plan.control;
  control.iteration = addScalarBuffer(ctx, DType::I64);
  addCarriedState(ctx, node, plan, body);
  for (size_t j = 0; j < inputs; ++j) {
    const Value *stacked = node.operand(states + j);
    int64_t axis = axisAttribute(node, "scan_input_axes", j, int64_t(stacked->shape().rank()));
    StackLayout layout =
        stackLayout(stacked, size_t(axis), reversedAttribute(node, "scan_input_directions", j));
    if (!control.length)
      control.length = layout.length;
    else if (layout.length != *control.length)
      control.otherLengths.push_back(layout.length);
    const Value *slice = body.inputs()[states + j];
    PlanBuffer buffer;
    buffer.sizeBytes = layout.contiguous() ? Dim(0) : byteSize(slice);
    int32_t sliceBuffer = ctx.addBuffer(std::move(buffer));
    plan.inputBuffers[states + j] = sliceBuffer;
    plan.iterationLocal.insert(sliceBuffer);
    if (layout.contiguous())
      plan.inputWindows.push_back({sliceBuffer, ctx.bufferOf(stacked), layout});
    else
      plan.unstacks.push_back(
          {ctx.bufferOf(stacked), sliceBuffer, layout, valueLabel("slice", stacked)});
  }
  for (size_t s = states; s < node.numResults(); ++s) {
    const Value *result = node.result(s);
    int64_t axis =
        axisAttribute(node, "scan_output_axes", s - states, int64_t(result->shape().rank()));
    StackLayout layout = stackLayout(result, size_t(axis),
                                     reversedAttribute(node, "scan_output_directions", s - states));
    plan.outputs[s] = {body.outputs()[s].value, -1, ctx.bufferOf(result), layout,
                       valueLabel("stack", result)};
  }
  bindCaptures(ctx, node, plan);
  lowerIterations(ctx, node, plan);
}

} // namespace onnxc::lower
