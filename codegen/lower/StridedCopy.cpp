//===- codegen/lower/StridedCopy.cpp - Byte moves shared by movement ops --===//
#include "codegen/lower/StridedCopy.h"

#include "llvm/IR/IntrinsicsX86.h"

#include "llvm/IR/IRBuilder.h"

#include <algorithm>

using namespace llvm;

namespace onnxc::lower {

void StridedCopy::simplify() {
  std::vector<CopyAxis> merged;
  for (const CopyAxis &axis : axes_) {
    if (axis.extent == Dim(1))
      continue;
    if (!merged.empty()) {
      CopyAxis &outer = merged.back();
      bool plain = !outer.zeroStrideWhenOne && !axis.zeroStrideWhenOne;
      if (plain && outer.srcStride == axis.srcStride * axis.extent &&
          outer.dstStride == axis.dstStride * axis.extent) {
        outer.extent = outer.extent * axis.extent;
        outer.srcStride = axis.srcStride;
        outer.dstStride = axis.dstStride;
        continue;
      }
    }
    merged.push_back(axis);
  }
  axes_ = std::move(merged);
}

Dim StridedCopy::numElements() const {
  Dim total(1);
  for (const CopyAxis &axis : axes_)
    total = total * axis.extent;
  return total;
}

bool StridedCopy::innerIsContiguous() const {
  return !axes_.empty() && !axes_.back().zeroStrideWhenOne && axes_.back().srcStride == Dim(1) &&
         axes_.back().dstStride == Dim(1);
}

namespace {

llvm::Value *sourceStride(KernelBuilder &k, const CopyAxis &axis) {
  llvm::Value *stride = k.dim(axis.srcStride);
  if (!axis.zeroStrideWhenOne)
    return stride;
  llvm::Value *isOne = k.ir().CreateICmpEQ(k.dim(*axis.zeroStrideWhenOne), k.i64(1));
  return k.ir().CreateSelect(isOne, k.i64(0), stride);
}

/// The multi-index after `index` in row-major order over `extents`
/// (wrapping to zeros after the last), without branches.
std::vector<llvm::Value *> nextIndex(IRBuilder<> &b, ArrayRef<llvm::Value *> index,
                                     ArrayRef<llvm::Value *> extents) {
  std::vector<llvm::Value *> next(index.size());
  llvm::Value *carry = b.getTrue();
  for (size_t i = index.size(); i-- > 0;) {
    llvm::Value *incremented = b.CreateAdd(index[i], b.CreateZExt(carry, b.getInt64Ty()));
    llvm::Value *wraps = b.CreateICmpEQ(incremented, extents[i]);
    next[i] = b.CreateSelect(wraps, b.getInt64(0), incremented);
    carry = wraps;
  }
  return next;
}

} // namespace

void StridedCopy::emit(KernelBuilder &k, llvm::Value *src, llvm::Value *dst,
                       llvm::Value *taskCount) const {
  IRBuilder<> &b = k.ir();
  std::vector<CopyAxis> axes = axes_;
  if (axes.empty())
    axes.push_back({Dim(1), Dim(1), Dim(1)});
  size_t size = elementSize_;
  const CopyAxis &inner = axes.back();
  size_t outerCount = axes.size() - 1;
  std::vector<llvm::Value *> extents, srcStrides, dstStrides;
  for (size_t i = 0; i < outerCount; ++i) {
    extents.push_back(k.dim(axes[i].extent));
    srcStrides.push_back(sourceStride(k, axes[i]));
    dstStrides.push_back(k.dim(axes[i].dstStride));
  }
  llvm::Value *run = k.dim(inner.extent);
  llvm::Value *innerSrcStride = sourceStride(k, inner);
  llvm::Value *innerDstStride = k.dim(inner.dstStride);
  bool contiguous = innerIsContiguous();
  bool fill = !inner.zeroStrideWhenOne && inner.srcStride == Dim(0) && inner.dstStride == Dim(1);

  // Copies elements [first, last) of the row whose index-0 elements are at
  // srcRow / dstRow.
  auto copyRow = [&](llvm::Value *srcRow, llvm::Value *dstRow, llvm::Value *first,
                     llvm::Value *last) {
    llvm::Value *count = b.CreateSub(last, first);
    if (contiguous) {
      auto copy = streaming_ ? streamElements : copyElements;
      copy(k, elementPointer(k, dstRow, first, size), elementPointer(k, srcRow, first, size), count,
           size);
      return;
    }
    Type *bits = elementBitsType(k, size);
    if (fill) {
      llvm::Value *value = b.CreateLoad(bits, srcRow);
      llvm::Value *out = elementPointer(k, dstRow, first, size);
      k.forRange(k.i64(0), count,
                 [&](llvm::Value *j) { b.CreateStore(value, b.CreateGEP(bits, out, j)); });
      return;
    }
    k.forRange(first, last, [&](llvm::Value *j) {
      llvm::Value *from = elementPointer(k, srcRow, b.CreateMul(j, innerSrcStride), size);
      llvm::Value *to = elementPointer(k, dstRow, b.CreateMul(j, innerDstStride), size);
      b.CreateStore(b.CreateLoad(bits, from), to);
    });
  };

  llvm::Value *total = k.dim(numElements());
  auto [begin, end] = taskShare(k, total, taskCount);
  k.ifThen(b.CreateICmpSLT(begin, end), [&] {
    if (outerCount == 0) {
      copyRow(src, dst, begin, end);
      return;
    }
    llvm::Value *firstRow = b.CreateUDiv(begin, run);
    llvm::Value *endRow = k.ceilDiv(end, run);
    std::vector<llvm::Value *> start = k.unflatten(firstRow, extents);
    k.forRangeCarried(
        firstRow, endRow, start,
        [&](llvm::Value *row, ArrayRef<llvm::Value *> index) -> std::vector<llvm::Value *> {
          llvm::Value *rowStart = b.CreateMul(row, run);
          llvm::Value *first = b.CreateSub(k.max(begin, rowStart), rowStart);
          llvm::Value *last = b.CreateSub(k.min(end, b.CreateAdd(rowStart, run)), rowStart);
          llvm::Value *srcRow = elementPointer(k, src, k.offset(index, srcStrides), size);
          llvm::Value *dstRow = elementPointer(k, dst, k.offset(index, dstStrides), size);
          copyRow(srcRow, dstRow, first, last);
          return nextIndex(b, index, extents);
        },
        1, "row");
  });
}

std::vector<Dim> contiguousStrides(const Shape &shape) {
  std::vector<Dim> strides(shape.rank(), Dim(1));
  for (size_t i = shape.rank(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

llvm::Value *copyTaskCount(FunctionBuilder &f, const Dim &elements, size_t elementSize) {
  IRBuilder<> &b = f.ir();
  llvm::Value *bytes = b.CreateMul(f.dim(elements), f.i64(int64_t(elementSize)));
  llvm::Value *tasks = f.ceilDiv(bytes, f.i64(kCopyGrainBytes));
  return f.min(f.max(tasks, f.i64(1)), f.i64(kMaxCopyTasks));
}

llvm::Value *setCopyTaskCount(StepBuilder &step, const Dim &elements, size_t elementSize) {
  SymbolicValue count = [elements, elementSize](FunctionBuilder &f) {
    return copyTaskCount(f, elements, elementSize);
  };
  step.setTaskCount(count);
  return count(step.kernel());
}

std::pair<llvm::Value *, llvm::Value *> taskShare(KernelBuilder &k, llvm::Value *total,
                                                  llvm::Value *taskCount) {
  IRBuilder<> &b = k.ir();
  llvm::Value *begin = b.CreateSDiv(b.CreateMul(total, k.taskBegin()), taskCount);
  llvm::Value *end = b.CreateSDiv(b.CreateMul(total, k.taskEnd()), taskCount);
  return {begin, end};
}

llvm::Value *elementPointer(FunctionBuilder &f, llvm::Value *base, llvm::Value *elementOffset,
                            size_t elementSize) {
  IRBuilder<> &b = f.ir();
  return b.CreateGEP(b.getInt8Ty(), base, b.CreateMul(elementOffset, f.i64(int64_t(elementSize))));
}

Type *elementBitsType(FunctionBuilder &f, size_t elementSize) {
  return f.ir().getIntNTy(unsigned(elementSize * 8));
}

void copyElements(FunctionBuilder &f, llvm::Value *dst, llvm::Value *src, llvm::Value *count,
                  size_t elementSize) {
  IRBuilder<> &b = f.ir();
  b.CreateMemCpy(dst, MaybeAlign(1), src, MaybeAlign(1),
                 b.CreateMul(count, f.i64(int64_t(elementSize))));
}

void streamElements(FunctionBuilder &f, llvm::Value *dst, llvm::Value *src, llvm::Value *count,
                    size_t elementSize) {
  IRBuilder<> &b = f.ir();
  constexpr int64_t kLine = 64;
  llvm::Value *bytes = b.CreateMul(count, f.i64(int64_t(elementSize)));
  auto plain = [&](llvm::Value *to, llvm::Value *from, llvm::Value *n) {
    b.CreateMemCpy(to, MaybeAlign(1), from, MaybeAlign(1), n);
  };
  f.ifThenElse(
      b.CreateICmpSLT(bytes, f.i64(kStreamMinBytes)), [&] { plain(dst, src, bytes); },
      [&] {
        // Up to the destination's next line through the cache, whole lines
        // streamed, the rest through the cache.
        llvm::Value *address = b.CreatePtrToInt(dst, b.getInt64Ty());
        llvm::Value *head = b.CreateAnd(b.CreateSub(f.i64(0), address), f.i64(kLine - 1));
        llvm::Value *lines = b.CreateUDiv(b.CreateSub(bytes, head), f.i64(kLine));
        plain(dst, src, head);
        llvm::Value *to = b.CreateGEP(b.getInt8Ty(), dst, head);
        llvm::Value *from = b.CreateGEP(b.getInt8Ty(), src, head);
        Type *line = FixedVectorType::get(b.getInt32Ty(), unsigned(kLine / 4));
        llvm::MDNode *nontemporal =
            llvm::MDNode::get(b.getContext(), llvm::ConstantAsMetadata::get(b.getInt32(1)));
        f.forRange(f.i64(0), lines, [&](llvm::Value *i) {
          llvm::Value *offset = b.CreateMul(i, f.i64(kLine));
          llvm::Value *value =
              b.CreateAlignedLoad(line, b.CreateGEP(b.getInt8Ty(), from, offset), Align(1));
          StoreInst *store =
              b.CreateAlignedStore(value, b.CreateGEP(b.getInt8Ty(), to, offset), Align(kLine));
          store->setMetadata(LLVMContext::MD_nontemporal, nontemporal);
        });
        llvm::Value *done = b.CreateAdd(head, b.CreateMul(lines, f.i64(kLine)));
        plain(b.CreateGEP(b.getInt8Ty(), dst, done), b.CreateGEP(b.getInt8Ty(), src, done),
              b.CreateSub(bytes, done));
        // Streaming stores are weakly ordered: drain them before the step ends.
        b.CreateIntrinsic(Intrinsic::x86_sse_sfence, {}, {});
      });
}

void zeroElements(FunctionBuilder &f, llvm::Value *dst, llvm::Value *count, size_t elementSize) {
  IRBuilder<> &b = f.ir();
  b.CreateMemSet(dst, b.getInt8(0), b.CreateMul(count, f.i64(int64_t(elementSize))), MaybeAlign(1));
}

llvm::Value *loadIndex(FunctionBuilder &f, DType type, llvm::Value *base, int64_t index) {
  return f.convert(f.loadElement(type, base, f.i64(index)), type, DType::I64);
}

} // namespace onnxc::lower
