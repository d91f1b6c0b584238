//===- codegen/kernels/CountedLoop.h - Counted loops with carried values --===//
//
// The one emitter of `for (iv = begin; iv < end; iv += step)` loops that
// carry values through their iterations, for the kernel emitters and the
// lowerings (GemmIRBuilder, RowKernels, FlashVectorIR, FunctionBuilder).
// Each caller keeps the IR it emitted before this was shared: its block and
// value names, the wrap flags of the induction variable's increment, whether
// LLVM may unroll the loop, and the loop's shape (tested at the top, or
// guarded and tested at the bottom).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"

#include <string>
#include <vector>

namespace onnxc {

/// How a counted loop is emitted; the defaults are GemmIRBuilder's.
struct CountedLoopShape {
  /// Names of the header, body and exit blocks, of the induction variable
  /// and of its increment.
  std::string header = "loop", body = "loop.body", exit = "loop.exit", iv = "iv", next = "";
  /// The increment is always `nsw`; `nuw` too when this is set.
  bool noUnsignedWrap = false;
  /// Marks the back-edge llvm.loop.unroll.disable (for loops unrolled by
  /// hand, which LLVM would otherwise unroll completely at constant trip
  /// counts, for code size and no speed).
  bool disableUnroll = false;
  /// false: a header tests iv < end and branches to the body or the exit;
  /// the carried values after the loop are the header's phis.
  /// true: a guard tests begin < end, the body is in the header and the
  /// back-edge tests iv + step < end; the values after the loop are phis in
  /// the exit, and a loop over a constant empty range emits nothing (`body`
  /// is not called). The `body` block name is then unused.
  bool guarded = false;
};

/// body(iv, carried) returns the next carried values, one per initial value.
using CountedLoopBody = llvm::function_ref<std::vector<llvm::Value *>(
    llvm::Value *iv, llvm::ArrayRef<llvm::Value *> carried)>;

/// Emits the loop at `builder`'s insertion point (in its function) and
/// leaves `builder` after it; returns the carried values after the loop
/// (`initial` when it runs zero times). `body` may emit nested control flow.
std::vector<llvm::Value *> emitCountedLoop(llvm::IRBuilderBase &builder,
                                           const CountedLoopShape &shape, llvm::Value *begin,
                                           llvm::Value *end, int64_t step,
                                           llvm::ArrayRef<llvm::Value *> initial,
                                           CountedLoopBody body);

/// A loop that carries no values, tested at the top, its back-edge marked
/// not to unroll (the int4 kernels' loops, unrolled by hand or long).
void emitPlainLoop(llvm::IRBuilderBase &builder, llvm::Value *begin, llvm::Value *end, int64_t step,
                   llvm::function_ref<void(llvm::Value *)> body);

} // namespace onnxc
