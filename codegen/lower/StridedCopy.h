//===- codegen/lower/StridedCopy.h - Byte moves shared by movement ops ----===//
//
// Transpose, Concat, Split, Slice, Expand and Tile all move elements as
//
//   dst[sum(i_k * dstStride_k)] = src[sum(i_k * srcStride_k)]
//
// over every index of some extents (the evaluator's stridedCopy). The
// strides are Dims, so axes that are contiguous in both tensors merge at
// compile time even when symbolic (seq * 64 == 64 * seq); after merging, a
// contiguous innermost axis becomes one memcpy per row. The work is split by
// element count, not by rows, so a single long run is parallel too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include <optional>
#include <utility>
#include <vector>

namespace onnxc::lower {

/// Bytes one task of a copy step moves (at least; a step has >= 1 task).
constexpr int64_t kCopyGrainBytes = 64 * 1024;
/// Bound on the task count of a copy step, so task * total stays in range.
constexpr int64_t kMaxCopyTasks = 1 << 14;

/// One axis of a strided copy; strides in elements (may be 0 or negative).
struct CopyAxis {
  Dim extent;
  Dim srcStride;
  Dim dstStride;
  /// Set for an Expand operand dim not provably equal to the result's: at
  /// run time the source stride is 0 when this dim is 1 (broadcast).
  std::optional<Dim> zeroStrideWhenOne = std::nullopt;
};

/// A copy of elements of `elementSize` bytes over the index space of its axes.
class StridedCopy {
public:
  explicit StridedCopy(size_t elementSize) : elementSize_(elementSize) {}

  void addAxis(CopyAxis axis) { axes_.push_back(std::move(axis)); }
  /// Contiguous rows of kStreamMinBytes or more are written with
  /// non-temporal stores (streamElements): for a large result nothing reads
  /// soon, such as a KV cache's present output.
  void setStreaming(bool streaming) { streaming_ = streaming; }
  /// Drops axes of extent 1 and merges neighbours contiguous in both tensors.
  void simplify();

  const std::vector<CopyAxis> &axes() const { return axes_; }
  size_t elementSize() const { return elementSize_; }
  Dim numElements() const;
  /// Whether the innermost axis is contiguous in both tensors (rows memcpy).
  bool innerIsContiguous() const;

  /// Emits the share of this call's tasks [taskBegin, taskEnd) out of
  /// `taskCount` tasks: `src` and `dst` point at the elements of index 0.
  void emit(KernelBuilder &k, llvm::Value *src, llvm::Value *dst, llvm::Value *taskCount) const;

private:
  size_t elementSize_;
  std::vector<CopyAxis> axes_;
  bool streaming_ = false;
};

/// Rows shorter than this are copied through the cache even when streaming.
constexpr int64_t kStreamMinBytes = 16 * 1024;

/// Row-major element strides of `shape` as Dims (innermost 1).
std::vector<Dim> contiguousStrides(const Shape &shape);

/// Tasks for a step moving `elements` elements of `elementSize` bytes: one
/// per kCopyGrainBytes, at least 1, at most kMaxCopyTasks.
llvm::Value *copyTaskCount(FunctionBuilder &f, const Dim &elements, size_t elementSize);

/// Sets the step's task count from the bytes it moves and returns the count
/// as computed in the step's kernel.
llvm::Value *setCopyTaskCount(StepBuilder &step, const Dim &elements, size_t elementSize);

/// The part [begin, end) of [0, total) that this call's tasks own when
/// [0, total) is cut evenly into `taskCount` parts.
std::pair<llvm::Value *, llvm::Value *> taskShare(KernelBuilder &k, llvm::Value *total,
                                                  llvm::Value *taskCount);

/// copyElements with the destination's 64-byte lines written by
/// non-temporal stores (no read for ownership, the cache left alone), then
/// an sfence; x86 only. Copies of fewer than kStreamMinBytes use memcpy.
void streamElements(FunctionBuilder &f, llvm::Value *dst, llvm::Value *src, llvm::Value *count,
                    size_t elementSize);

/// `base` advanced by `elementOffset` elements of `elementSize` bytes.
llvm::Value *elementPointer(FunctionBuilder &f, llvm::Value *base, llvm::Value *elementOffset,
                            size_t elementSize);

/// The integer type moving one element of `elementSize` bytes.
llvm::Type *elementBitsType(FunctionBuilder &f, size_t elementSize);

/// Copies `count` elements between non-overlapping `dst` and `src`.
void copyElements(FunctionBuilder &f, llvm::Value *dst, llvm::Value *src, llvm::Value *count,
                  size_t elementSize);

/// Zero-fills `count` elements at `dst`.
void zeroElements(FunctionBuilder &f, llvm::Value *dst, llvm::Value *count, size_t elementSize);

/// The i64 value of element `index` of an integer operand buffer of `type`.
llvm::Value *loadIndex(FunctionBuilder &f, DType type, llvm::Value *base, int64_t index);

} // namespace onnxc::lower
