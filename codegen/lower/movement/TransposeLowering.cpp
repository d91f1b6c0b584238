//===- codegen/lower/movement/TransposeLowering.cpp - Transpose as a tiled copy -===//
//
// After merging axes that stay adjacent (StridedCopy::simplify), a transpose
// that keeps the innermost axis copies contiguous runs (perm 0,2,1,3 on
// [B, S, H, D] copies runs of D). One that moves it reads with a stride along
// the result's innermost axis; it is cut into square tiles over that axis and
// the axis the source is contiguous in, so both sides touch whole cache lines
// while a tile is copied.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/VectorTranspose.h"
#include "codegen/lower/StridedCopy.h"
#include "codegen/lower/movement/MovementLoweringInternal.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/IRBuilder.h"

#include <algorithm>

using namespace llvm;

namespace onnxc::lower {

namespace {

/// Tile side in elements: one 64-byte cache line of the narrowest side.
int64_t tileSide(size_t elementSize) { return std::max<int64_t>(16, 128 / int64_t(elementSize)); }

/// Side of the square blocks transposed in registers.
constexpr int64_t kBlock = 8;

/// Transposes an 8 x 8 block in vector registers: row r of the source (8
/// elements contiguous in it, `srcStride` elements apart) becomes column r
/// of the destination.
void emitBlock8x8(KernelBuilder &k, size_t elementSize, llvm::Value *src, llvm::Value *srcStride,
                  llvm::Value *dst, llvm::Value *dstStride) {
  IRBuilder<> &b = k.ir();
  Type *bits = elementBitsType(k, elementSize);
  auto *vector = FixedVectorType::get(bits, kBlock);
  std::array<llvm::Value *, 8> rows;
  for (int64_t r = 0; r < kBlock; ++r)
    rows[size_t(r)] = b.CreateAlignedLoad(
        vector, b.CreateGEP(bits, src, b.CreateMul(k.i64(r), srcStride)), Align(elementSize));
  std::array<llvm::Value *, 8> out = transpose8x8(b, rows);
  for (int64_t c = 0; c < kBlock; ++c)
    b.CreateAlignedStore(out[size_t(c)], b.CreateGEP(bits, dst, b.CreateMul(k.i64(c), dstStride)),
                         Align(elementSize));
}

/// The tiled copy of `copy` (simplified; innermost axis not contiguous in
/// the source, axis `q` contiguous in it).
class TiledTranspose {
public:
  TiledTranspose(const StridedCopy &copy, size_t q)
      : axes_(copy.axes()), size_(copy.elementSize()), side_(tileSide(size_)), q_(q),
        j_(axes_.size() - 1) {
    for (size_t i = 0; i < axes_.size(); ++i)
      if (i != q_ && i != j_)
        others_.push_back(i);
  }

  /// Extents of the tile grid: the other axes, then the tiles along q and j.
  /// Emitted in the entry block: splitEvenly uses the count there.
  std::vector<llvm::Value *> gridExtents(FunctionBuilder &f) const {
    IRBuilder<> &h = f.hoisted();
    auto tiles = [&](const Dim &extent) {
      return h.CreateUDiv(h.CreateAdd(f.dim(extent), f.i64(side_ - 1)), f.i64(side_));
    };
    std::vector<llvm::Value *> extents;
    for (size_t i : others_)
      extents.push_back(f.dim(axes_[i].extent));
    extents.push_back(tiles(axes_[q_].extent));
    extents.push_back(tiles(axes_[j_].extent));
    return extents;
  }

  llvm::Value *tileCount(FunctionBuilder &f) const {
    llvm::Value *count = f.i64(1);
    for (llvm::Value *extent : gridExtents(f))
      count = f.hoisted().CreateMul(count, extent);
    return count;
  }

  void emit(StepBuilder &step, unsigned in, unsigned out) const {
    int64_t grain = std::max<int64_t>(1, kCopyGrainBytes / (side_ * side_ * int64_t(size_)));
    auto [begin, end] =
        step.splitEvenly([this](FunctionBuilder &f) { return tileCount(f); }, grain);
    KernelBuilder &k = step.kernel();
    IRBuilder<> &b = k.ir();
    std::vector<llvm::Value *> grid = gridExtents(k);
    llvm::Value *src = k.buffer(in), *dst = k.buffer(out);
    llvm::Value *extentQ = k.dim(axes_[q_].extent), *extentJ = k.dim(axes_[j_].extent);
    llvm::Value *dstStrideQ = k.dim(axes_[q_].dstStride);
    llvm::Value *srcStrideJ = k.dim(axes_[j_].srcStride);
    std::vector<llvm::Value *> srcStrides, dstStrides;
    for (size_t i : others_) {
      srcStrides.push_back(k.dim(axes_[i].srcStride));
      dstStrides.push_back(k.dim(axes_[i].dstStride));
    }
    Type *bits = elementBitsType(k, size_);
    llvm::Value *side = k.i64(side_);
    k.forRange(begin, end, [&](llvm::Value *tile) {
      std::vector<llvm::Value *> index = k.unflatten(tile, grid);
      llvm::Value *q0 = b.CreateMul(index[others_.size()], side);
      llvm::Value *j0 = b.CreateMul(index[others_.size() + 1], side);
      ArrayRef<llvm::Value *> outer = ArrayRef(index).take_front(others_.size());
      llvm::Value *srcBase =
          b.CreateAdd(k.offset(outer, srcStrides), b.CreateAdd(q0, b.CreateMul(j0, srcStrideJ)));
      llvm::Value *dstBase =
          b.CreateAdd(k.offset(outer, dstStrides), b.CreateAdd(b.CreateMul(q0, dstStrideQ), j0));
      llvm::Value *from = elementPointer(k, src, srcBase, size_);
      llvm::Value *to = elementPointer(k, dst, dstBase, size_);
      auto copyTile = [&](llvm::Value *rows, llvm::Value *cols) {
        k.forRange(k.i64(0), rows, [&](llvm::Value *qi) {
          llvm::Value *fromRow = b.CreateGEP(bits, from, qi);
          llvm::Value *toRow = b.CreateGEP(bits, to, b.CreateMul(qi, dstStrideQ));
          k.forRange(k.i64(0), cols, [&](llvm::Value *ji) {
            llvm::Value *value =
                b.CreateLoad(bits, b.CreateGEP(bits, fromRow, b.CreateMul(ji, srcStrideJ)));
            b.CreateStore(value, b.CreateGEP(bits, toRow, ji));
          });
        });
      };
      auto copyFullTile = [&] {
        k.forRange(
            k.i64(0), side,
            [&](llvm::Value *qb) {
              k.forRange(
                  k.i64(0), side,
                  [&](llvm::Value *jb) {
                    llvm::Value *blockFrom =
                        b.CreateGEP(bits, from, b.CreateAdd(qb, b.CreateMul(jb, srcStrideJ)));
                    llvm::Value *blockTo =
                        b.CreateGEP(bits, to, b.CreateAdd(b.CreateMul(qb, dstStrideQ), jb));
                    emitBlock8x8(k, size_, blockFrom, srcStrideJ, blockTo, dstStrideQ);
                  },
                  kBlock, "jb");
            },
            kBlock, "qb");
      };
      llvm::Value *rows = k.min(side, b.CreateSub(extentQ, q0));
      llvm::Value *cols = k.min(side, b.CreateSub(extentJ, j0));
      llvm::Value *full = b.CreateAnd(b.CreateICmpEQ(rows, side), b.CreateICmpEQ(cols, side));
      k.ifThenElse(full, copyFullTile, [&] { copyTile(rows, cols); });
    });
  }

private:
  std::vector<CopyAxis> axes_;
  size_t size_;
  int64_t side_;
  size_t q_, j_;
  std::vector<size_t> others_;
};

} // namespace

void lowerTranspose(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data)
    ctx.unsupported(node, "missing data operand");
  const Shape &in = data->shape();
  const Value *result = node.result(0);
  std::vector<int64_t> perm = transposePermutation(node, in.rank());
  std::vector<Dim> inStrides = contiguousStrides(in);
  std::vector<Dim> outStrides = contiguousStrides(result->shape());
  StridedCopy copy(dtypeSize(data->dtype()));
  for (size_t i = 0; i < perm.size(); ++i)
    copy.addAxis({in[size_t(perm[i])], inStrides[size_t(perm[i])], outStrides[i]});
  copy.simplify();

  StepBuilder step = ctx.beginStep(node, "transpose");
  unsigned src = step.input(data);
  unsigned dst = step.output(result);
  const std::vector<CopyAxis> &axes = copy.axes();
  auto contiguousInSource = std::find_if(
      axes.begin(), axes.end(), [](const CopyAxis &axis) { return axis.srcStride == Dim(1); });
  if (copy.innerIsContiguous() || contiguousInSource == axes.end()) {
    llvm::Value *tasks = setCopyTaskCount(step, result->shape().numElements(), copy.elementSize());
    KernelBuilder &k = step.kernel();
    copy.emit(k, k.buffer(src), k.buffer(dst), tasks);
  } else {
    TiledTranspose(copy, size_t(contiguousInSource - axes.begin())).emit(step, src, dst);
  }
  step.finish();
}

} // namespace onnxc::lower
