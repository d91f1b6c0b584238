//===- codegen/ModelPlan.h - What lowering hands to the artifact emitters ---===//
//
// Lowering turns an ir::Graph into kernels (llvm::Functions in one module)
// plus a ModelPlan: the symbols, the model's inputs and outputs, every
// buffer a step touches, and the steps in execution order. The plan is the
// C++ mirror of onnxc_model_descriptor (runtime/include/onnxc/model_abi.h);
// DescriptorEmitter turns it into that descriptor as constant data, so the
// JIT and the shared library describe the model the same way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/shape/Dim.h"
#include "ir/shape/Shape.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class Function;
class FunctionType;
class LLVMContext;
} // namespace llvm

namespace onnxc {

/// A symbolic dimension and the input axis its value is read from at run
/// time (model_abi.h's onnxc_symbol_source); -1 and -1 for a cache capacity,
/// which the runtime binds itself.
struct PlanSymbol {
  std::string name;
  int32_t input = 0;
  int32_t axis = 0;
};

/// A past input and present output the runtime may bind to one buffer
/// (model_abi.h's onnxc_cache_pair; CachePairs.h proves it).
struct PlanCachePair {
  int32_t input = 0;
  int32_t output = 0;
  int32_t axis = 0;
  int32_t capacitySymbol = 0;     ///< Rows of the present's layout.
  int32_t pastCapacitySymbol = 0; ///< Rows of the past's layout.
};

/// A model input or output: name, element type and (symbolic) shape.
struct PlanTensor {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  /// Inputs only: the exclusive bound of the values that index a table of
  /// constant rows (model_abi.h's input_index_bounds), 0 if none.
  int64_t indexBound = 0;
};

/// Values equal to onnxc_buffer_kind.
enum class BufferKind : int32_t { Input = 1, Output = 2, Intermediate = 3, Constant = 4 };

/// The bytes of a constant buffer. Either shared (the plan keeps them alive)
/// or borrowed (the caller keeps `data` alive until the descriptor is
/// emitted; LLVM copies the bytes into the module).
struct ConstantBytes {
  ConstantBytes() = default;
  explicit ConstantBytes(std::shared_ptr<const std::vector<uint8_t>> bytes)
      : owner(bytes), data(bytes->data()), size(bytes->size()) {}
  ConstantBytes(const void *borrowed, size_t byteCount)
      : data(static_cast<const uint8_t *>(borrowed)), size(byteCount) {}

  std::shared_ptr<const void> owner;
  const uint8_t *data = nullptr;
  size_t size = 0;
};

/// One buffer of the model. `index` is the input/output number for
/// Input/Output buffers and unused otherwise. Intermediates live in the
/// runtime's arena from `firstStep` to `lastStep` (inclusive).
struct PlanBuffer {
  BufferKind kind = BufferKind::Intermediate;
  int32_t index = 0;
  Dim sizeBytes = Dim(0);
  ConstantBytes constant; // BufferKind::Constant only
  int32_t firstStep = 0;
  int32_t lastStep = 0;
};

/// One kernel invocation. `kernel` has kernelFunctionType() and `taskCount`
/// (null: one task) has taskCountFunctionType(); both must live in the
/// module the descriptor is emitted into. `buffers` index ModelPlan::buffers
/// and are passed to the kernel in this order.
struct PlanStep {
  std::string name;
  llvm::Function *kernel = nullptr;
  llvm::Function *taskCount = nullptr;
  std::vector<int32_t> buffers;
  /// Why the kernel may return non-zero ("an index of 'ids' is out of
  /// range"); empty when it always returns 0.
  std::string failure;
  /// A branch step (model_abi.h's ONNXC_STEP_BRANCH, a loop's entry or
  /// back-edge): one task, and a kernel result of ONNXC_BRANCH_TAKEN
  /// continues the run at step `branchTarget`.
  bool isBranch = false;
  int32_t branchTarget = 0;
  /// The step copies buffers[0] whole into buffers[1] and does nothing else
  /// (LoweringContext::copyBuffer); a loop may make it copy in place.
  bool isCopy = false;
};

/// A condition the runtime checks when binding inputs (onnxc_assumption):
/// `expr` == 0 or >= 0, over the plan's symbols.
struct PlanAssumption {
  Dim expr;
  int32_t kind = 1; // onnxc_assumption_kind
  std::string message;
};

/// Everything the runtime needs to run a compiled model, as lowering sees it.
struct ModelPlan {
  std::string name;
  std::vector<PlanSymbol> symbols;
  std::vector<PlanTensor> inputs;
  std::vector<PlanTensor> outputs;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;
  std::vector<PlanAssumption> assumptions;
  std::vector<PlanCachePair> cachePairs;
  /// Why a candidate cache pair keeps two buffers (`onnxc compile --explain`).
  std::vector<std::string> cacheNotes;
  /// The arithmetic of the matrix products ("f32" or "bf16"), and the CPU
  /// features beyond x86-64's the code may use, which the runtime checks
  /// before a session runs it (model_abi.h's cpu_features): those kernels
  /// chose, and every checkable one the target enables (lowerModel).
  std::string precision = "f32";
  std::set<std::string> cpuFeatures;
  /// The onnxc that compiled the model (model_abi.h's onnxc_version).
  std::string onnxcVersion;
  /// Whether the model's object code came from the compile cache
  /// (CompileCache.h) instead of LLVM; not part of the descriptor.
  bool codeFromCache = false;

  /// Symbol name -> position in `symbols`, as encodeDim wants it.
  std::map<std::string, int32_t> symbolIndex() const {
    std::map<std::string, int32_t> index;
    for (size_t i = 0; i < symbols.size(); ++i)
      index.emplace(symbols[i].name, int32_t(i));
    return index;
  }
};

/// int32_t (void *const *buffers, const int64_t *symbols, int64_t begin, int64_t end):
/// the type of onnxc_kernel_fn (0 = success).
llvm::FunctionType *kernelFunctionType(llvm::LLVMContext &context);
/// int64_t (const int64_t *symbols): the type of onnxc_task_count_fn.
llvm::FunctionType *taskCountFunctionType(llvm::LLVMContext &context);

} // namespace onnxc
