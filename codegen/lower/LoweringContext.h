//===- codegen/lower/LoweringContext.h - What an op lowering works with ---===//
//
// Lowering walks the graph in order and hands each node to the lowering
// registered for its op (OpLowerings.h). An op lowering:
//
//   StepBuilder step = ctx.beginStep(node, "relu");
//   unsigned x = step.input(node.operand(0));     // buffer slots, in order
//   unsigned y = step.output(node.result(0));
//   auto total = [&](FunctionBuilder &f) { return f.numElements(shape); };
//   auto [begin, end] = step.splitEvenly(total, 4096);  // tasks -> elements
//   KernelBuilder &k = step.kernel();
//   k.forRange(begin, end, [&](llvm::Value *i) { ... k.buffer(x) ... });
//   step.finish();
//
// or, for a result that is its operand's bytes (Reshape, Squeeze, ...),
// ctx.alias(result, operand) with no step at all.
//
// The context owns the value -> buffer assignment: graph inputs and outputs
// get the runtime's Input/Output buffers, constants become Constant buffers
// the first time a step reads them (so weights a lowering re-packs into a
// new constant are not also embedded raw), every other result an arena
// Intermediate whose lifetime the context derives from the steps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelPlan.h"
#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/kernels/IntegerGemm.h"
#include "codegen/lower/FunctionBuilder.h"
#include "ir/Graph.h"
#include "ir/Node.h"
#include "ir/Tensor.h"
#include "ir/Value.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace llvm {
class Module;
}

namespace onnxc::lower {

class LoweringContext;

/// The body of a step's kernel: a FunctionBuilder that also knows the
/// kernel's buffers and its task range.
class KernelBuilder : public FunctionBuilder {
public:
  KernelBuilder(llvm::Function *kernel, const SymbolIndex &symbolIndex);
  /// The pointer of slot `slot` (as returned by StepBuilder::input/output/
  /// constant), loaded in the entry block.
  llvm::Value *buffer(unsigned slot);
  llvm::Value *taskBegin();
  llvm::Value *taskEnd();
  /// When `condition` (i1) holds, the kernel returns at once, and the run
  /// fails with the step's failure message (StepBuilder::setFailure). For
  /// invalid input data only (an index out of range), never for a bug.
  void failIf(llvm::Value *condition);

private:
  llvm::Value *buffers_;
  llvm::BasicBlock *failBlock_ = nullptr;
  std::map<unsigned, llvm::Value *> bufferCache_;
};

/// Computes a step-wide quantity (a task count, an element total) from the
/// symbols; called once in the task-count function and once in the kernel.
using SymbolicValue = std::function<llvm::Value *(FunctionBuilder &)>;

/// One step under construction.
class StepBuilder {
public:
  StepBuilder(LoweringContext &context, std::string name, std::string kernelName);
  StepBuilder(StepBuilder &&) = default;
  ~StepBuilder();

  /// Declares that the step reads `value`; returns its slot.
  unsigned input(const Value *value);
  /// Declares that the step writes `value` (a result of the node being
  /// lowered); returns its slot.
  unsigned output(const Value *value);
  /// A new constant buffer of the artifact (e.g. pre-packed weights);
  /// returns its slot.
  unsigned constant(ConstantBytes bytes);
  /// A slot for plan buffer `planBuffer` (for the context's own steps).
  unsigned bufferSlot(int32_t planBuffer);

  /// The kernel body. Declare every slot before emitting code that uses it.
  KernelBuilder &kernel() { return *kernel_; }

  /// The step has `count(symbols)` tasks (default: one task).
  void setTaskCount(const SymbolicValue &count);
  /// Splits [0, total) into tasks of `grain` items: sets the task count to
  /// ceil(total / grain) and returns this call's item range [begin, end),
  /// computed in the kernel's entry block.
  std::pair<llvm::Value *, llvm::Value *> splitEvenly(const SymbolicValue &total, int64_t grain);

  /// What a failing kernel (KernelBuilder::failIf) tells the user, e.g.
  /// "an index of 'input_ids' is out of range for axis 0 of size 30522".
  void setFailure(std::string message) { step_.failure = std::move(message); }

  /// Renames the step (beginStep names it after its node).
  void setName(std::string name) { step_.name = std::move(name); }

  /// Terminates the kernel and appends the step to the plan.
  void finish();
  /// The same, the kernel returning `status` (i32) instead of 0: a branch
  /// step's ONNXC_BRANCH_TAKEN (LoopSteps.cpp).
  void finish(llvm::Value *status);

private:
  LoweringContext &context_;
  PlanStep step_;
  std::unique_ptr<KernelBuilder> kernel_;
  bool finished_ = false;
};

class LoweringContext {
public:
  LoweringContext(const Graph &graph, llvm::Module &module, ModelPlan &plan);

  const Graph &graph() const { return graph_; }
  llvm::Module &module() { return module_; }
  ModelPlan &plan() { return plan_; }
  const SymbolIndex &symbolIndex() const { return symbolIndex_; }

  /// Whether the kernels may use 256-bit vectors and FMA (the target has
  /// AVX2+FMA); lowerings pick their fast paths on it.
  bool hasAvx2Fma() const { return avx2Fma_; }
  void setAvx2Fma(bool value) { avx2Fma_ = value; }
  /// Floats per vector of the GEMM kernels (GemmPacking.h's lanes).
  int64_t gemmLanes() const { return gemmLanes_; }
  void setGemmLanes(int64_t lanes) { gemmLanes_ = lanes; }
  /// The integer GEMM kernel the target can run (IntegerGemm.h).
  IntegerGemmIsa integerGemmIsa() const { return integerGemmIsa_; }
  void setIntegerGemmIsa(IntegerGemmIsa isa) { integerGemmIsa_ = isa; }
  /// The bf16 GEMM kernel when the model compiles at --precision=bf16
  /// (Bf16Gemm.h), else none: the matrix products stay f32.
  std::optional<Bf16GemmIsa> bf16GemmIsa() const { return bf16GemmIsa_; }
  void setBf16GemmIsa(std::optional<Bf16GemmIsa> isa) { bf16GemmIsa_ = isa; }
  /// Records that a kernel uses `features` (comma-separated LLVM names), for
  /// the runtime to check before running the model.
  void requireCpuFeatures(const std::string &features);

  /// The shape whose row-major strides address `value` in its buffer: its
  /// own, except for a KV cache the runtime may update in place
  /// (CachePairs.h), whose sequence dim is then the cache capacity.
  const Shape &layoutOf(const Value *value) const;
  bool hasCacheLayout(const Value *value) const { return layouts_.count(value) != 0; }
  void setLayouts(std::unordered_map<const Value *, Shape> layouts) {
    layouts_ = std::move(layouts);
  }

  /// The constant tensor of `value` (an initializer or folded constant), or
  /// null when its contents are only known at run time.
  const Tensor *constantValue(const Value *value) const;

  /// Starts the step that computes `node`; `kernelName` is a short kind
  /// ("add", "gemm", ...) made unique within the module.
  StepBuilder beginStep(const Node &node, const std::string &kernelName);

  /// `result` has exactly the bytes of `source` (a view: Reshape, Squeeze,
  /// Identity, ...): no step, the two share a buffer. When `result` is a
  /// graph output, a copy step is emitted instead.
  void alias(const Value *result, const Value *source);

  /// Fusion support: whether `value` already has its contents when the
  /// current step runs (a graph input, a constant, or the result of a node
  /// lowered before), and marking a later node as computed by the current
  /// step (the driver then skips it; its results must not be used by any
  /// node outside the fused group).
  bool isAvailable(const Value *value) const;
  void claim(const Node &node);
  bool isClaimed(const Node &node) const { return claimed_.count(&node) != 0; }
  void markLowered(const Node &node);

  /// Throws onnxc::Error "cannot compile <node>: <reason>".
  [[noreturn]] void unsupported(const Node &node, const std::string &reason) const;

  /// A fresh module-unique function name from `base`.
  std::string uniqueName(const std::string &base);

  // ---- used by StepBuilder and the driver of the lowering --------------
  /// Buffer of `value`, creating it on first use (Input/Output/Constant/
  /// Intermediate by what the value is).
  int32_t bufferOf(const Value *value);
  int32_t addBuffer(PlanBuffer buffer);
  /// An arena buffer of `bytes` that no value owns, for steps of one node
  /// that hand data to each other (a recurrent op's input projections): it
  /// lives from the first to the last step naming it (StepBuilder::bufferSlot).
  int32_t addScratch(const Dim &bytes);
  /// Gives `value` plan buffer `buffer` before any step names it: lowering
  /// an If branch in a context of its own, the branch's inputs take the
  /// buffers of the values they capture and its outputs those of the If's
  /// results (ControlFlowLowering.cpp).
  void bindBuffer(const Value *value, int32_t buffer) { buffers_[value] = buffer; }
  bool hasBuffer(const Value *value) const { return buffers_.count(value) != 0; }
  /// The constant buffer made by `make` for `key` (say, one weight packed
  /// one way), made on the first request: a weight several nodes share
  /// (ALBERT's layers, a reused projection) is stored in the artifact once.
  int32_t sharedConstant(const std::string &key, const std::function<ConstantBytes()> &make);
  /// Appends a step (lifetimes are derived later by finalizeLifetimes).
  void addStep(PlanStep step) { plan_.steps.push_back(std::move(step)); }
  /// Emits a byte copy step from `source`'s buffer into `destination`'s.
  void copyValue(const Value *source, const Value *destination, const std::string &name);
  /// Emits a step copying `bytes` bytes from plan buffer `from` to `to`.
  void copyBuffer(int32_t from, int32_t to, const Dim &bytes, const std::string &name);
  /// After every node: copies for graph outputs that are not written by a
  /// step into their own Output buffer, then the intermediates' lifetimes.
  void finalize();

private:
  const Graph &graph_;
  llvm::Module &module_;
  ModelPlan &plan_;
  SymbolIndex symbolIndex_;
  bool avx2Fma_ = true;
  int64_t gemmLanes_ = 8;
  IntegerGemmIsa integerGemmIsa_ = IntegerGemmIsa::Generic;
  std::optional<Bf16GemmIsa> bf16GemmIsa_;
  std::unordered_map<const Value *, int32_t> buffers_;
  std::unordered_map<const Value *, Shape> layouts_;
  std::map<std::string, int32_t> sharedConstants_;
  std::map<std::string, int> names_;
  std::set<const Node *> claimed_;
  std::set<const Node *> lowered_;
};

} // namespace onnxc::lower
