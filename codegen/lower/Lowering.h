//===- codegen/lower/Lowering.h - ir::Graph -> kernels + ModelPlan ----------===//
//
// The entry point of code generation: every node of a verified, shape-
// inferred graph becomes one step (or none, for views), its kernel emitted
// into `module`; the returned plan describes buffers and steps for the
// descriptor emitter. Shapes may be symbolic: every symbol must appear as a
// whole dim of some graph input (where the runtime reads its value), and no
// value may have an unknown dim.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelPlan.h"
#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/kernels/IntegerGemm.h"
#include "ir/Graph.h"
#include "ir/Progress.h"

#include <optional>

namespace llvm {
class Module;
}

namespace onnxc {

struct LoweringOptions {
  /// Whether to emit AVX2+FMA fast paths (otherwise portable vector code).
  bool avx2Fma = true;
  /// Floats per vector of the GEMM kernels: 16 when the target has AVX-512F
  /// (GemmPacking.h), else 8.
  int64_t gemmLanes = 8;
  /// The integer GEMM kernel of DynamicQuantizedMatMul (chooseIntegerGemmIsa).
  IntegerGemmIsa integerGemm = IntegerGemmIsa::Generic;
  /// The bf16 GEMM kernel at --precision=bf16; none: f32 products.
  std::optional<Bf16GemmIsa> bf16Gemm;
  /// Told each node before its kernel is emitted (CompileStage::Lower).
  ProgressCallback progress;
};

/// Lowers `graph` into `module` (which must have its target data layout).
/// Throws onnxc::Error naming every node whose op has no lowering, or the
/// first node that cannot be compiled and why.
ModelPlan lowerGraph(const Graph &graph, llvm::Module &module, const LoweringOptions &options = {});

/// Whether codegen can lower `kind` at all (some attributes may still be refused).
bool hasLowering(OpKind kind);

} // namespace onnxc
