//===- codegen/CompilableShapes.h - Shapes a compiled model can run with ---===//
//
// Some shapes pass the IR but no compiled model can ever run with them: a
// constant negative dimension (no tensor has it, so no input matches and no
// buffer can be sized), or an input or output of rank above ONNXC_MAX_RANK
// (onnxc_tensor carries at most that many dims, so the C API cannot pass
// it). Refusing them before lowering turns a model.so that fails at every
// call into one error at compile time.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace onnxc {

class Graph;

/// Throws onnxc::Error naming the first value with a constant negative dim,
/// and the first graph input or output whose rank exceeds ONNXC_MAX_RANK.
void checkCompilableShapes(const Graph &graph);

} // namespace onnxc
