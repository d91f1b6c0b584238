//===- codegen/kernels/GemmTileIR.cpp - The GEMM's tiles: micro-kernel, stores, panels -===//
//
// GemmIRBuilder's tile level: the MR x NR micro-kernel, the tile stores with
// their fused epilogue, the prefetches of C and of the next B panel, and the
// two ways a row block walks B (a column of tiles per panel, or four panels
// side by side for one or two rows). The loop nest around them is in
// GemmIRBuilder.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/GemmIRBuilder.h"

#include "codegen/kernels/VectorMath.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Intrinsics.h"

#include <functional>

namespace onnxc {
namespace {

bool isConstantFalse(llvm::Value *value) {
  auto *constant = llvm::dyn_cast_or_null<llvm::Constant>(value);
  return constant && constant->isNullValue();
}

} // namespace

llvm::Value *emitGemmActivation(llvm::IRBuilder<> &builder, llvm::Value *x,
                                GemmActivation activation) {
  switch (activation) {
  case GemmActivation::None:
    return x;
  case GemmActivation::Relu: {
    // select(x > 0, x, 0) maps to one vmaxps and sends NaN to 0, like max(x, 0).
    llvm::Value *zero = llvm::Constant::getNullValue(x->getType());
    return builder.CreateSelect(builder.CreateFCmpOGT(x, zero), x, zero);
  }
  case GemmActivation::GeluErf:
  case GemmActivation::GeluTanh: {
    llvm::Value *y = activation == GemmActivation::GeluErf ? vmath::emitGeluErf(builder, x)
                                                           : vmath::emitGeluTanh(builder, x);
    // As the Gelu op's lowering: the evaluator's x/2 * (1 + erf(..)) is NaN at -inf.
    llvm::Value *minusInf = llvm::ConstantFP::getInfinity(x->getType(), /*Negative=*/true);
    return builder.CreateSelect(builder.CreateFCmpOEQ(x, minusInf),
                                llvm::ConstantFP::getNaN(x->getType()), y);
  }
  }
  return x;
}

GemmIRBuilder::Accumulators GemmIRBuilder::emitMicroKernel(const ATile &aTile, llvm::Value *bPanel,
                                                           llvm::Value *depth, int64_t unroll,
                                                           const PanelPrefetch &prefetch,
                                                           int64_t rows) {
  // A full tile has 2 * MR independent FMA chains, enough to hide the FMA
  // latency; a short one (the row tails) splits k in two interleaved halves
  // with their own accumulators, so 2 * rows FMAs per k still run at the
  // FMA throughput instead of the latency (a 2-row tail then costs a third
  // of a full tile, not all of it).
  const int64_t splits = rows < mr_ ? 2 : 1;
  auto stepK = [&](llvm::Value *k, int64_t split, std::vector<llvm::Value *> &acc) {
    llvm::Value *bRow = floatAt(bPanel, builder_.CreateMul(k, index(nr_)));
    llvm::Value *b0 = builder_.CreateAlignedLoad(vectorType_, bRow, llvm::Align(4));
    llvm::Value *b1 =
        builder_.CreateAlignedLoad(vectorType_, floatAt(bRow, index(lanes_)), llvm::Align(4));
    llvm::Value *aColumn =
        aTile.panel ? floatAt(aTile.panel, builder_.CreateMul(k, index(mr_))) : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
      llvm::Value *a = builder_.CreateLoad(floatType_, aColumn ? floatAt(aColumn, index(r))
                                                               : floatAt(aTile.rows[size_t(r)], k));
      llvm::Value *broadcast = builder_.CreateVectorSplat(unsigned(lanes_), a);
      size_t i = size_t(2 * (split * rows + r));
      acc[i] =
          builder_.CreateIntrinsic(llvm::Intrinsic::fma, {vectorType_}, {broadcast, b0, acc[i]});
      acc[i + 1] = builder_.CreateIntrinsic(llvm::Intrinsic::fma, {vectorType_},
                                            {broadcast, b1, acc[i + 1]});
    }
  };
  // Unrolled so loop overhead is small next to the FMAs; a one-step loop
  // finishes depths that are not a multiple of `unroll`.
  std::vector<llvm::Value *> zeros(size_t(splits * rows * 2),
                                   llvm::Constant::getNullValue(vectorType_));
  llvm::Value *unrolledEnd = builder_.CreateAnd(depth, index(~(unroll - 1)));
  auto unrolled = emitLoop(index(0), unrolledEnd, unroll, zeros,
                           [&](llvm::Value *k, llvm::ArrayRef<llvm::Value *> carried) {
                             std::vector<llvm::Value *> acc(carried.begin(), carried.end());
                             if (prefetch.first) {
                               llvm::Value *first =
                                   floatAt(prefetch.first, builder_.CreateMul(k, index(nr_)));
                               for (int64_t line = 0; line < prefetch.lines; ++line)
                                 emitPrefetch(floatAt(first, index(line * prefetch.spacing)),
                                              /*write=*/false, /*locality=*/2);
                             }
                             for (int64_t u = 0; u < unroll; ++u)
                               stepK(builder_.CreateAdd(k, index(u)), u % splits, acc);
                             return acc;
                           });
  auto final = emitLoop(unrolledEnd, depth, 1, unrolled,
                        [&](llvm::Value *k, llvm::ArrayRef<llvm::Value *> carried) {
                          std::vector<llvm::Value *> acc(carried.begin(), carried.end());
                          stepK(k, 0, acc);
                          return acc;
                        });
  Accumulators result;
  result.fill(llvm::Constant::getNullValue(vectorType_));
  for (int64_t i = 0; i < rows * 2; ++i) {
    result[size_t(i)] = final[size_t(i)];
    if (splits == 2)
      result[size_t(i)] = builder_.CreateFAdd(result[size_t(i)], final[size_t(rows * 2 + i)]);
  }
  return result;
}

std::array<llvm::Value *, 2> GemmIRBuilder::loadBias(const GemmOperands &operands,
                                                     const GemmEpilogue &epilogue, llvm::Value *col,
                                                     const std::array<llvm::Value *, 2> &masks,
                                                     bool applyEpilogue) {
  std::array<llvm::Value *, 2> bias = {nullptr, nullptr};
  if (applyEpilogue && epilogue.bias)
    for (int half = 0; half < 2; ++half)
      if (!isConstantFalse(masks[half]))
        bias[half] = loadVector(
            floatAt(operands.bias, builder_.CreateAdd(col, index(half * lanes_))), masks[half]);
  return bias;
}

void GemmIRBuilder::emitStoreHalf(const GemmOperands &operands, const GemmEpilogue &epilogue,
                                  llvm::Value *value, llvm::Value *outRow, llvm::Value *col,
                                  int half, llvm::Value *mask, llvm::Value *bias,
                                  llvm::Value *isFirst, bool applyEpilogue) {
  llvm::Value *cRow =
      floatAt(operands.c, builder_.CreateAdd(builder_.CreateMul(outRow, operands.ldc), col));
  llvm::Value *cPointer = floatAt(cRow, index(half * lanes_));
  // K blocks after the first add to what earlier blocks stored.
  if (!llvm::isa<llvm::ConstantInt>(isFirst) || llvm::cast<llvm::ConstantInt>(isFirst)->isZero()) {
    // The load is harmless on the first block (C is the caller's buffer) and
    // cheaper than another copy of the store code.
    llvm::Value *previous = loadVector(cPointer, mask);
    value = builder_.CreateFAdd(
        value, builder_.CreateSelect(isFirst, llvm::Constant::getNullValue(vectorType_), previous));
  }
  if (applyEpilogue) {
    if (bias)
      value = builder_.CreateFAdd(value, bias);
    value = emitGemmActivation(builder_, value, epilogue.activation);
    if (epilogue.residual) {
      llvm::Value *residualOffset =
          builder_.CreateAdd(builder_.CreateMul(outRow, operands.ldResidual),
                             builder_.CreateAdd(col, index(half * lanes_)));
      value =
          builder_.CreateFAdd(value, loadVector(floatAt(operands.residual, residualOffset), mask));
    }
  }
  storeVector(value, cPointer, mask);
}

void GemmIRBuilder::emitTileStore(const GemmOperands &operands, const GemmEpilogue &epilogue,
                                  llvm::Value *row, llvm::Value *rows, llvm::Value *col,
                                  llvm::Value *width, llvm::Value *isFirst, bool applyEpilogue) {
  std::array<llvm::Value *, 2> masks = {laneMask(width, 0), laneMask(width, 1)};
  std::array<llvm::Value *, 2> bias = loadBias(operands, epilogue, col, masks, applyEpilogue);
  emitLoop(index(0), rows, 1, [&](llvm::Value *r) {
    for (int half = 0; half < 2; ++half) {
      if (isConstantFalse(masks[half]))
        continue;
      llvm::Value *offset =
          builder_.CreateAdd(builder_.CreateMul(r, index(nr_)), index(half * lanes_));
      llvm::Value *value =
          builder_.CreateAlignedLoad(vectorType_, floatAt(tileScratch_, offset), llvm::Align(32));
      emitStoreHalf(operands, epilogue, value, builder_.CreateAdd(row, r), col, half, masks[half],
                    bias[half], isFirst, applyEpilogue);
    }
  });
}

void GemmIRBuilder::emitFullTileStore(const GemmOperands &operands, const GemmEpilogue &epilogue,
                                      const Accumulators &acc, llvm::Value *row, llvm::Value *col,
                                      llvm::Value *width, llvm::Value *isFirst,
                                      bool applyEpilogue) {
  std::array<llvm::Value *, 2> masks = {laneMask(width, 0), laneMask(width, 1)};
  std::array<llvm::Value *, 2> bias = loadBias(operands, epilogue, col, masks, applyEpilogue);
  for (int64_t r = 0; r < mr_; ++r)
    for (int half = 0; half < 2; ++half)
      if (!isConstantFalse(masks[half]))
        emitStoreHalf(operands, epilogue, acc[size_t(2 * r + half)],
                      builder_.CreateAdd(row, index(r)), col, half, masks[half], bias[half],
                      isFirst, applyEpilogue);
}

void GemmIRBuilder::emitPrefetch(llvm::Value *pointer, bool write, int locality) {
  llvm::Function *prefetch = llvm::Intrinsic::getDeclaration(
      builder_.GetInsertBlock()->getModule(), llvm::Intrinsic::prefetch, {builder_.getPtrTy()});
  builder_.CreateCall(prefetch, {pointer, builder_.getInt32(write ? 1 : 0),
                                 builder_.getInt32(locality), builder_.getInt32(1)});
}

void GemmIRBuilder::emitPrefetchTile(const GemmOperands &operands, llvm::Value *row,
                                     llvm::Value *col) {
  // The tile's C rows (nr floats each: every line they touch, unaligned or
  // not) are needed right after the k loop; fetching them now hides an
  // L2/L3 miss per row. Prefetches never fault, so rows past M are harmless.
  std::vector<int64_t> lines;
  for (int64_t line = 0; line < nr_; line += 16)
    lines.push_back(line);
  lines.push_back(nr_ - 1);
  for (int64_t r = 0; r < mr_; ++r) {
    llvm::Value *offset = builder_.CreateAdd(
        builder_.CreateMul(builder_.CreateAdd(row, index(r)), operands.ldc), col);
    for (int64_t line : lines) {
      emitPrefetch(
          builder_.CreateGEP(floatType_, operands.c, builder_.CreateAdd(offset, index(line))),
          /*write=*/true, /*locality=*/3);
    }
  }
}

GemmIRBuilder::ATile GemmIRBuilder::aTileAt(const PanelColumn &column, llvm::Value *tileRow) {
  // Rows past the block's end read its last row again: a tail tile's
  // kernel then runs on valid memory, and its extra rows are not stored.
  // In full tiles the clamp changes nothing, but it keeps the twelve row
  // addresses opaque to LLVM: with a run-time lda, rows r * lda apart got
  // chained through one another, and the k loop hoisted and spilled its
  // broadcasts (197x768x768 in onnxc_bench_gemm at 55% of peak, not 85%).
  llvm::Value *last = builder_.CreateSub(builder_.CreateSub(column.rows, tileRow), index(1));
  ATile aTile;
  if (blocking_.packA) {
    aTile.panel = floatAt(packedA_, builder_.CreateMul(tileRow, column.depth));
    return aTile;
  }
  // Each row's address also passes through an empty asm (no instruction,
  // same register): loop strength reduction then sees twelve plain base
  // pointers, not twelve clamped expressions over the enclosing loops' IVs,
  // whose reassociations it enumerated per k loop copy (llc on the 4-layer
  // LLaMA's AVX-512 module: 5.2 -> 1.5 s, LSR 3.5 -> 0.6; no slower).
  auto *opaque = llvm::InlineAsm::get(
      llvm::FunctionType::get(builder_.getPtrTy(), {builder_.getPtrTy()}, false), "", "=r,0",
      /*hasSideEffects=*/false);
  for (int64_t r = 0; r < mr_; ++r) {
    llvm::Value *inTile = r == 0 ? index(0) : min(index(r), last);
    aTile.rows[size_t(r)] = builder_.CreateCall(
        opaque, {floatAt(column.aBlock, builder_.CreateMul(builder_.CreateAdd(tileRow, inTile),
                                                           column.operands.lda))});
  }
  return aTile;
}

GemmIRBuilder::PanelPrefetch GemmIRBuilder::panelPrefetch(const PanelColumn &column,
                                                          llvm::Value *tileRow, int64_t unroll,
                                                          int64_t perStep) {
  if (!prefetchPanels_)
    return PanelPrefetch{};
  const int64_t spread = unroll * nr_ / 16 / perStep;
  llvm::Value *line =
      builder_.CreateAnd(builder_.CreateSDiv(tileRow, index(mr_)), index(spread - 1));
  PanelPrefetch prefetch;
  prefetch.first =
      floatAt(column.bPanel, builder_.CreateAdd(builder_.CreateMul(column.depth, index(nr_)),
                                                builder_.CreateMul(line, index(16))));
  prefetch.lines = perStep;
  prefetch.spacing = spread * 16;
  return prefetch;
}

int64_t GemmIRBuilder::densestPrefetchPerStep(int64_t unroll) const {
  // Every line the step reads has its line of the next panel requested.
  return unroll * nr_ / 16;
}

void GemmIRBuilder::emitFullTiles(const PanelColumn &column, llvm::Value *fullRows,
                                  int64_t perStep) {
  const GemmOperands &operands = column.operands;
  emitLoop(index(0), fullRows, mr_, [&](llvm::Value *tileRow) {
    llvm::Value *row = builder_.CreateAdd(column.rowBlock, tileRow);
    emitPrefetchTile(operands, row, column.col);
    Accumulators acc =
        emitMicroKernel(aTileAt(column, tileRow), column.bPanel, column.depth, unroll_,
                        panelPrefetch(column, tileRow, unroll_, perStep), mr_);
    auto store = [&](bool applyEpilogue) {
      emitFullTileStore(operands, column.epilogue, acc, row, column.col, column.width,
                        column.isFirst, applyEpilogue);
    };
    emitIf(
        column.isLast, [&] { store(true); }, [&] { store(false); });
  });
}

void GemmIRBuilder::emitTailTile(const PanelColumn &column, llvm::Value *fullRows) {
  llvm::Value *tileRow = fullRows;
  llvm::Value *row = builder_.CreateAdd(column.rowBlock, tileRow);
  llvm::Value *tileRows = builder_.CreateSub(column.rows, tileRow);
  emitPrefetchTile(column.operands, row, column.col);
  ATile aTile = aTileAt(column, tileRow);
  constexpr int64_t tailUnroll = 4;
  PanelPrefetch prefetch =
      panelPrefetch(column, tileRow, tailUnroll, densestPrefetchPerStep(tailUnroll));
  // After full tiles, which have brought the next panel in, the tail's
  // prefetches point at its own panel, in cache by then.
  if (prefetch.first)
    prefetch.first = builder_.CreateSelect(builder_.CreateICmpEQ(fullRows, index(0)),
                                           prefetch.first, column.bPanel);
  auto toScratch = [&](int64_t kernelRows) {
    Accumulators acc =
        emitMicroKernel(aTile, column.bPanel, column.depth, tailUnroll, prefetch, kernelRows);
    for (size_t i = 0; i < size_t(kernelRows * 2); ++i)
      builder_.CreateAlignedStore(acc[i], floatAt(tileScratch_, index(int64_t(i) * lanes_)),
                                  llvm::Align(32));
  };
  emitIf(
      builder_.CreateICmpSLE(tileRows, index(2)),
      [&] {
        emitIf(
            builder_.CreateICmpEQ(tileRows, index(1)), [&] { toScratch(1); },
            [&] { toScratch(2); });
      },
      [&] {
        emitIf(
            builder_.CreateICmpEQ(tileRows, index(3)), [&] { toScratch(3); },
            [&] {
              if (mr_ <= 6)
                return toScratch(mr_);
              emitIf(
                  builder_.CreateICmpSLE(tileRows, index(6)), [&] { toScratch(6); },
                  [&] { toScratch(mr_); });
            });
      });
  auto store = [&](bool applyEpilogue) {
    emitTileStore(column.operands, column.epilogue, row, tileRows, column.col, column.width,
                  column.isFirst, applyEpilogue);
  };
  emitIf(
      column.isLast, [&] { store(true); }, [&] { store(false); });
}

void GemmIRBuilder::emitPanelColumn(const GemmOperands &operands, const GemmEpilogue &epilogue,
                                    llvm::Value *aBlock, llvm::Value *rowBlock, llvm::Value *rows,
                                    llvm::Value *depth, llvm::Value *bPanel, llvm::Value *col,
                                    llvm::Value *isFirst, llvm::Value *isLast, bool fullWidth) {
  llvm::Value *width = fullWidth ? index(nr_) : builder_.CreateSub(operands.n, col);
  const PanelColumn column{operands, epilogue, aBlock,  rowBlock, rows, depth,
                           bPanel,   col,      isFirst, isLast,   width};
  // The next panel in memory (the next column's, or the next K block's
  // first) is read next. Weights larger than L3 (ViT-base's are 344 MB)
  // come from DRAM, slower than a tile's k loop reads them (a line per 6
  // cycles), which the first tile of each panel paid in full. So the tiles
  // of a panel bring the next one to L2 between them: per iteration of the
  // k loop a tile prefetches `perStep` of the `stepLines` lines the
  // iteration reads, `spread` lines apart, from an offset cycling with the
  // tile; `spread` tiles cover the panel (panelPrefetch).
  //
  // As few prefetches as still cover the panel: each one in flight holds
  // a line fill buffer the tile's own loads then wait for. On Sapphire
  // Rapids, ViT-base (one thread, interleaved A/B runs) ran 5% faster with
  // one prefetch per 8 lines read than with one per 4, and 1-3% faster
  // again (three A/Bs) with one per 16 (17-tile blocks), which the k loop
  // unrolled by 4 no longer offers: its sparsest is one per 8 lines, no
  // slower on Emerald Rapids (GemmIRBuilder's constructor). A duplicate
  // prefetch of a line already requested cost as much as a new one, so
  // each density has its own tile loop, chosen per row block: the sparsest
  // whose spread the block's full tiles reach, down to one tile covering
  // the whole next panel. A block of a few rows (a decoder's step over a
  // batch of prompts or beams) has one tile per panel; when it covered a
  // quarter of the next panel, B came from DRAM at about one stream's speed
  // (Zen 3, onnxc_bench_gemm, B from DRAM: 6x768x50257 at 38 GFLOP/s, now
  // 62; 5x3072x768 41 -> 75; M >= 24 unchanged).
  //
  // The full tiles, which store straight from the accumulators.
  llvm::Value *fullRows = builder_.CreateSub(rows, builder_.CreateSRem(rows, index(mr_)));
  const int64_t stepLines = unroll_ * nr_ / 16;
  const int64_t densest = densestPrefetchPerStep(unroll_);
  std::function<void(int64_t)> densityFrom = [&](int64_t perStep) {
    if (perStep >= densest)
      return emitFullTiles(column, fullRows, densest);
    emitIf(
        builder_.CreateICmpSGE(fullRows, index(stepLines / perStep * mr_)),
        [&] { emitFullTiles(column, fullRows, perStep); }, [&] { densityFrom(perStep * 2); });
  };
  // Without prefetches (panels made in a buffer) every density is the same loop.
  densityFrom(prefetchPanels_ ? 1 : densest);

  // The row tail, through an MR-row tile scratch and a loop over the valid
  // rows: up to 3 rows take a kernel of that many rows, and a 12-row tile's
  // tails of up to 6 rows a 6-row kernel. One tile per panel: its k loop is
  // unrolled by 4 (less code), and it prefetches as densely as before.
  emitIf(builder_.CreateICmpSLT(fullRows, rows), [&] { emitTailTile(column, fullRows); });
}

void GemmIRBuilder::emitPanelGroup(const GemmOperands &operands, const GemmEpilogue &epilogue,
                                   llvm::Value *aBlock, llvm::Value *rowBlock, int64_t rows,
                                   llvm::Value *depth, llvm::Value *bGroup, llvm::Value *col,
                                   llvm::Value *isFirst, llvm::Value *isLast) {
  // acc[(r * kGroupPanels + p) * 2 + half]: 8 FMA chains per row, enough
  // for the FMA latency; per k 8 B loads feed them.
  const int64_t perSet = rows * kGroupPanels * 2;
  llvm::Value *panelStride = builder_.CreateMul(depth, index(nr_));
  auto stepK = [&](llvm::Value *k, std::vector<llvm::Value *> &acc) {
    std::vector<llvm::Value *> x;
    for (int64_t r = 0; r < rows; ++r)
      x.push_back(builder_.CreateVectorSplat(
          unsigned(lanes_),
          builder_.CreateLoad(
              floatType_,
              floatAt(aBlock, builder_.CreateAdd(builder_.CreateMul(index(r), operands.lda), k)))));
    llvm::Value *kRow = builder_.CreateMul(k, index(nr_));
    for (int64_t p = 0; p < kGroupPanels; ++p)
      for (int half = 0; half < 2; ++half) {
        llvm::Value *offset = builder_.CreateAdd(builder_.CreateMul(index(p), panelStride),
                                                 builder_.CreateAdd(kRow, index(half * lanes_)));
        llvm::Value *b =
            builder_.CreateAlignedLoad(vectorType_, floatAt(bGroup, offset), llvm::Align(4));
        for (int64_t r = 0; r < rows; ++r) {
          llvm::Value *&sum = acc[size_t((r * kGroupPanels + p) * 2 + half)];
          sum =
              builder_.CreateIntrinsic(llvm::Intrinsic::fma, {vectorType_}, {x[size_t(r)], b, sum});
        }
      }
  };
  constexpr int64_t unroll = 4;
  std::vector<llvm::Value *> zeros(size_t(perSet), llvm::Constant::getNullValue(vectorType_));
  llvm::Value *unrolledEnd = builder_.CreateAnd(depth, index(~(unroll - 1)));
  auto unrolled = emitLoop(index(0), unrolledEnd, unroll, zeros,
                           [&](llvm::Value *k, llvm::ArrayRef<llvm::Value *> carried) {
                             std::vector<llvm::Value *> acc(carried.begin(), carried.end());
                             for (int64_t u = 0; u < unroll; ++u)
                               stepK(builder_.CreateAdd(k, index(u)), acc);
                             return acc;
                           });
  auto acc = emitLoop(unrolledEnd, depth, 1, unrolled,
                      [&](llvm::Value *k, llvm::ArrayRef<llvm::Value *> carried) {
                        std::vector<llvm::Value *> next(carried.begin(), carried.end());
                        stepK(k, next);
                        return next;
                      });
  auto store = [&](bool applyEpilogue) {
    for (int64_t p = 0; p < kGroupPanels; ++p) {
      llvm::Value *panelCol = builder_.CreateAdd(col, index(p * nr_));
      std::array<llvm::Value *, 2> bias =
          loadBias(operands, epilogue, panelCol, {nullptr, nullptr}, applyEpilogue);
      for (int64_t r = 0; r < rows; ++r)
        for (int half = 0; half < 2; ++half)
          emitStoreHalf(operands, epilogue, acc[size_t((r * kGroupPanels + p) * 2 + half)],
                        builder_.CreateAdd(rowBlock, index(r)), panelCol, half, nullptr,
                        bias[size_t(half)], isFirst, applyEpilogue);
    }
  };
  emitIf(
      isLast, [&] { store(true); }, [&] { store(false); });
}

} // namespace onnxc
