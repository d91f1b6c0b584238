//===- codegen/lower/Lowering.cpp - ir::Graph -> kernels + ModelPlan --------===//

#include "codegen/lower/Lowering.h"

#include "codegen/lower/CachePairs.h"
#include "codegen/lower/LoweringContext.h"
#include "codegen/lower/OpLowerings.h"
#include "ir/Error.h"
#include "ir/IndexTables.h"

#include "llvm/IR/Module.h"

#include <set>
#include <sstream>

namespace onnxc {

namespace lower {

const LoweringTable &opLowerings() {
  static const LoweringTable table = [] {
    LoweringTable t;
    registerElementwiseLowerings(t);
    registerMovementLowerings(t);
    registerReductionLowerings(t);
    registerNormalizationLowerings(t);
    registerLinearAlgebraLowerings(t);
    registerAttentionLowerings(t);
    registerConvolutionLowerings(t);
    registerRecurrentLowerings(t);
    registerScatterGatherLowerings(t);
    registerQuantizationLowerings(t);
    registerQuantizedGemmLowerings(t);
    registerBlockQuantizedMatMulLowerings(t);
    registerQuantizedConvLowerings(t);
    registerPadLowerings(t);
    registerPoolingLowerings(t);
    registerResizeLowerings(t);
    registerControlFlowLowerings(t);
    return t;
  }();
  return table;
}

} // namespace lower

namespace {

/// The symbols the runtime binds: those that are a whole dim of an input.
std::set<std::string> inputSymbols(const Graph &graph) {
  std::set<std::string> bound;
  for (const Value *input : graph.inputs())
    for (const Dim &dim : input->shape().dims())
      if (dim.isSymbol())
        bound.insert(dim.symbolName());
  return bound;
}

/// Every symbol is read from the first input axis whose dim is exactly it.
void bindSymbols(const Graph &graph, ModelPlan &plan) {
  std::set<std::string> bound;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Shape &shape = graph.inputs()[i]->shape();
    for (size_t axis = 0; axis < shape.rank(); ++axis)
      if (shape[axis].isSymbol() && bound.insert(shape[axis].symbolName()).second)
        plan.symbols.push_back({shape[axis].symbolName(), int32_t(i), int32_t(axis)});
  }
  auto checkValue = [&](const Value *value) {
    for (size_t axis = 0; axis < value->shape().rank(); ++axis) {
      const Dim &d = value->shape()[axis];
      if (d.isUnknown())
        fail("cannot compile: value '", value->name(), "' has a data-dependent dimension (shape ",
             value->shape().str(), "); the compiled path needs shapes known from the inputs'");
      for (const std::string &symbol : d.symbols())
        if (!bound.count(symbol) && value->isGraphInput())
          fail("cannot compile: graph input '", value->name(), "' ", value->shape().str(),
               " has symbol '", symbol, "' only inside ", d.str(), ", and no input axis is '",
               symbol, "' alone to bind it from");
        else if (!bound.count(symbol))
          // Values are checked in order, so this is the first to carry the
          // symbol: its node is the one inference made it up for.
          fail("cannot compile: the shape of value '", value->name(), "' (", value->shape().str(),
               ") depends on symbol '", symbol, "', which ",
               value->definingNode() ? value->definingNode()->describe() : "shape inference",
               " introduced for a dim it cannot state in the graph inputs' dims (one that "
               "follows from input contents, or a bound clamped to a symbolic dim); `onnxc run` "
               "compiles such a graph for given input values");
    }
  };
  for (const Value *input : graph.inputs())
    checkValue(input);
  for (const Node *node : graph.topologicalOrder())
    for (const Value *result : node->results())
      if (result->hasUses() || graph.isOutput(result))
        checkValue(result);
}

/// The graph's shape assumptions, for the runtime to check when it binds
/// the inputs; each must be over symbols the runtime binds.
void collectAssumptions(const Graph &graph, ModelPlan &plan) {
  std::map<std::string, int32_t> bound = plan.symbolIndex();
  for (const ShapeAssumption &assumption : graph.assumptions()) {
    for (const std::string &symbol : assumption.expr.symbols())
      if (!bound.count(symbol))
        fail("cannot compile: ", assumption.message, ", and '", symbol,
             "' is not a dimension of any graph input, so no run could check it");
    plan.assumptions.push_back({assumption.expr, int32_t(assumption.kind), assumption.message});
  }
}

void describeTensors(const Graph &graph, ModelPlan &plan) {
  for (const Value *input : graph.inputs())
    plan.inputs.push_back(
        {input->name(), input->dtype(), input->shape(), constantIndexBound(*input)});
  for (const GraphOutput &output : graph.outputs())
    plan.outputs.push_back({output.name, output.value->dtype(), output.value->shape()});
}

/// Names every op in the graph that has no lowering, all in one message.
void checkEveryOpLowers(const std::vector<Node *> &order) {
  std::set<std::string> missing;
  for (const Node *node : order)
    if (!lower::opLowerings().lowerings[unsigned(node->kind())])
      missing.insert(std::string(node->opName()));
  if (missing.empty())
    return;
  std::ostringstream os;
  bool firstOp = true;
  for (const std::string &op : missing) {
    os << (firstOp ? "" : ", ") << op;
    firstOp = false;
  }
  fail("cannot compile: codegen has no kernel for op", missing.size() > 1 ? "s " : " ", os.str(),
       " (use `onnxc run --backend=ref` to evaluate such a model)");
}

} // namespace

bool hasLowering(OpKind kind) { return lower::opLowerings().lowerings[unsigned(kind)] != nullptr; }

ModelPlan lowerGraph(const Graph &graph, llvm::Module &module, const LoweringOptions &options) {
  ModelPlan plan;
  plan.name = graph.name();
  std::vector<Node *> order = graph.topologicalOrder();
  lower::checkControlFlow(order, inputSymbols(graph));
  checkEveryOpLowers(order);
  bindSymbols(graph, plan);
  collectAssumptions(graph, plan);
  describeTensors(graph, plan);
  std::unordered_map<const Value *, Shape> layouts = lower::findCachePairs(graph, plan);

  lower::LoweringContext context(graph, module, plan);
  context.setLayouts(std::move(layouts));
  context.setAvx2Fma(options.avx2Fma);
  context.setGemmLanes(options.gemmLanes);
  context.setIntegerGemmIsa(options.integerGemm);
  context.setBf16GemmIsa(options.bf16Gemm);
  plan.precision = options.bf16Gemm ? "bf16" : "f32";
  int64_t position = 0;
  for (const Node *node : order) {
    ++position;
    if (context.isClaimed(*node))
      continue;
    bool used = graph.isOutput(node->result(0));
    for (const Value *result : node->results())
      used = used || result->hasUses() || graph.isOutput(result);
    if (!used)
      continue; // dead code the pipeline did not remove (e.g. at -O0)
    reportProgress(options.progress, {CompileStage::Lower, std::string(opName(node->kind())),
                                      position - 1, int64_t(order.size())});
    withSizeContext(node->describe(), [&] {
      lower::opLowerings().lowerings[unsigned(node->kind())](context, *node);
    });
    context.markLowered(*node);
  }
  context.finalize();
  return plan;
}

} // namespace onnxc
