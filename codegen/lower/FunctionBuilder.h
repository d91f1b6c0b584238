//===- codegen/lower/FunctionBuilder.h - IRBuilder for kernel bodies -------===//
//
// Every function lowering emits (a step's kernel, its task-count function)
// receives the bound symbol values as an `const int64_t *symbols` argument.
// FunctionBuilder wraps an IRBuilder positioned in such a function and adds
// what every kernel needs: dims of the IR evaluated at run time (constant
// dims fold to constants), element loads and stores for every dtype, and
// structured loops.
//
// Values computed once per call (buffer pointers, dims, strides) go to the
// function's entry block through `hoisted()`, so they dominate every loop a
// kernel opens later, wherever the first request came from.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/shape/Dim.h"
#include "ir/shape/Shape.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"

#include <map>
#include <string>
#include <vector>

namespace onnxc::lower {

/// Symbol name -> index into the `symbols` argument.
using SymbolIndex = std::map<std::string, int32_t>;

class FunctionBuilder {
public:
  /// Positions the builder at the start of `function`'s body. `symbols` is
  /// the function's `const int64_t *` argument.
  FunctionBuilder(llvm::Function *function, llvm::Value *symbols, const SymbolIndex &symbolIndex);
  virtual ~FunctionBuilder() = default;
  FunctionBuilder(const FunctionBuilder &) = delete;
  FunctionBuilder &operator=(const FunctionBuilder &) = delete;

  llvm::IRBuilder<> &ir() { return builder_; }
  llvm::LLVMContext &context() { return builder_.getContext(); }
  llvm::Module &module() { return *function_->getParent(); }
  llvm::Function *function() { return function_; }

  /// A builder whose insertion point is the end of the entry block, for
  /// values that must dominate the whole body.
  llvm::IRBuilder<> &hoisted() { return entryBuilder_; }

  // ---- integers --------------------------------------------------------
  llvm::Value *i64(int64_t value) { return builder_.getInt64(value); }
  /// The value of `dim` for the bound symbols (i64), emitted in the entry
  /// block. Throws onnxc::Error for an unknown dim or an unbound symbol.
  llvm::Value *dim(const Dim &dim);
  /// dim() of every axis.
  std::vector<llvm::Value *> dims(const Shape &shape);
  /// Product of the dims (1 for a scalar), in the entry block.
  llvm::Value *numElements(const Shape &shape);
  /// Row-major element strides of `shape` (innermost 1), in the entry block.
  std::vector<llvm::Value *> strides(const Shape &shape);
  /// Strides to read an operand of shape `operand` at the index of a result
  /// of shape `result` under ONNX (numpy) broadcasting: right-aligned axes,
  /// stride 0 where the operand's dim is 1 (or absent) and the result's is
  /// not. Result rank >= operand rank.
  std::vector<llvm::Value *> broadcastStrides(const Shape &operand, const Shape &result);
  /// sum(index[i] * strides[i]), at the current insertion point.
  llvm::Value *offset(llvm::ArrayRef<llvm::Value *> index, llvm::ArrayRef<llvm::Value *> strides);
  /// Splits a linear index into a multi-index over `extents` (row-major).
  std::vector<llvm::Value *> unflatten(llvm::Value *linear, llvm::ArrayRef<llvm::Value *> extents);
  llvm::Value *ceilDiv(llvm::Value *a, llvm::Value *b);
  llvm::Value *min(llvm::Value *a, llvm::Value *b);
  llvm::Value *max(llvm::Value *a, llvm::Value *b);

  // ---- elements --------------------------------------------------------
  /// How an element is held in memory: f16/bf16 as i16, bool as i8.
  llvm::Type *storageType(DType type);
  /// How an element is computed with: f16/bf16 as float, bool as i1,
  /// integers as their width (signedness lives in the DType).
  llvm::Type *computeType(DType type);
  /// Element `index` (i64, in elements) of `base`, converted to computeType.
  llvm::Value *loadElement(DType type, llvm::Value *base, llvm::Value *index);
  /// Stores `value` (of computeType) as element `index` of `base`.
  void storeElement(DType type, llvm::Value *value, llvm::Value *base, llvm::Value *index);
  /// Address of element `index` of a `type` array at `base`.
  llvm::Value *elementAddress(DType type, llvm::Value *base, llvm::Value *index);
  /// Converts a computeType(from) value to computeType(to) with ONNX Cast
  /// semantics (float -> int truncates toward zero, -> bool is != 0,
  /// bool -> number is 0/1, int widths sign- or zero-extend by signedness;
  /// i4/u4 results wrap to their 4 bits).
  llvm::Value *convert(llvm::Value *value, DType from, DType to);
  /// A computeType(type) constant.
  llvm::Value *constant(DType type, double value);

  // ---- control flow ----------------------------------------------------
  /// for (iv = begin; iv < end; iv += step) body(iv). The builder is left
  /// after the loop. `body` may open nested loops.
  void forRange(llvm::Value *begin, llvm::Value *end, llvm::function_ref<void(llvm::Value *)> body,
                int64_t step = 1, const char *name = "i");
  /// Like forRange, carrying `init` through the iterations: body returns the
  /// next carried values. Returns the values after the loop.
  std::vector<llvm::Value *> forRangeCarried(
      llvm::Value *begin, llvm::Value *end, llvm::ArrayRef<llvm::Value *> init,
      llvm::function_ref<std::vector<llvm::Value *>(llvm::Value *, llvm::ArrayRef<llvm::Value *>)>
          body,
      int64_t step = 1, const char *name = "i");
  /// Nested loops over [0, extents[0]) x ... (row-major order). An empty
  /// `extents` runs body once with an empty index.
  void loopNest(llvm::ArrayRef<llvm::Value *> extents,
                llvm::function_ref<void(llvm::ArrayRef<llvm::Value *>)> body);
  /// if (condition) then(); the builder is left after it.
  void ifThen(llvm::Value *condition, llvm::function_ref<void()> then);
  /// if (condition) then() else otherwise().
  void ifThenElse(llvm::Value *condition, llvm::function_ref<void()> then,
                  llvm::function_ref<void()> otherwise);

  /// Terminates the body with `ret` (void or value).
  void finish(llvm::Value *returnValue = nullptr);

protected:
  llvm::Function *function_;
  llvm::Value *symbols_;
  const SymbolIndex &symbolIndex_;
  llvm::IRBuilder<> builder_;
  llvm::IRBuilder<> entryBuilder_;
  std::map<std::string, llvm::Value *> dimCache_;
};

/// An i8 (scalar or vector) reduced to the low 4 bits of an i4 (sign
/// extended) or u4 (zero extended) `type`: ONNX's Cast to int4 wraps.
llvm::Value *wrapToFourBits(llvm::IRBuilderBase &b, llvm::Value *value, DType type);

} // namespace onnxc::lower
