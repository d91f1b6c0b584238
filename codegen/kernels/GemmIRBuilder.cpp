//===- codegen/kernels/GemmIRBuilder.cpp - Loop-nest emission shared by GEMM kernels -===//
#include "codegen/kernels/GemmIRBuilder.h"

#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/VectorMath.h"
#include "codegen/kernels/VectorTranspose.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Metadata.h"

#include <cassert>
#include <functional>

namespace onnxc {
namespace {

bool isConstantFalse(llvm::Value *value) {
  auto *constant = llvm::dyn_cast_or_null<llvm::Constant>(value);
  return constant && constant->isNullValue();
}

/// `activation` applied lane-wise to the float vector `x`.
llvm::Value *emitActivation(llvm::IRBuilder<> &builder, llvm::Value *x, GemmActivation activation) {
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

} // namespace

GemmIRBuilder::GemmIRBuilder(llvm::Function &function, const GemmBlocking &blocking)
    : builder_(llvm::BasicBlock::Create(function.getContext(), "entry", &function)),
      blocking_(blocking) {
  floatType_ = builder_.getFloatTy();
  lanes_ = blocking.lanes;
  nr_ = blocking.nr();
  mr_ = blocking.mr();
  // An iteration of the micro-kernel's k loop reads 4 lines of a B panel
  // with 8 lanes and 16 with 16 lanes: the fewer prefetches per line read,
  // the better (emitPanelColumn), and one per iteration is the fewest.
  unroll_ = lanes_ == GemmLanesAvx512 ? 8 : 4;
  vectorType_ = llvm::FixedVectorType::get(floatType_, unsigned(lanes_));
  vector8Type_ = llvm::FixedVectorType::get(floatType_, 8);
  // Both buffers are fixed-size allocas in the entry block, so they cost one
  // stack-pointer adjustment per call and nothing per tile.
  // 8 floats of slack: the vectorized packing's last store may overrun.
  if (blocking.packA) {
    auto *packedA = builder_.CreateAlloca(
        llvm::ArrayType::get(floatType_, uint64_t(maxPackedBlockRows(blocking) * blocking.kc + 8)),
        nullptr, "packedA");
    packedA->setAlignment(llvm::Align(64));
    packedA_ = packedA;
  }
  auto *scratch =
      builder_.CreateAlloca(llvm::ArrayType::get(floatType_, uint64_t(mr_ * nr_)), nullptr, "tile");
  scratch->setAlignment(llvm::Align(64));
  tileScratch_ = scratch;
}

std::vector<llvm::Value *> GemmIRBuilder::emitLoop(llvm::Value *begin, llvm::Value *end,
                                                   int64_t step,
                                                   llvm::ArrayRef<llvm::Value *> initial,
                                                   LoopBody body) {
  // The loops that matter are unrolled by hand; with K and N constant, LLVM
  // would otherwise fully unroll every short loop and multiply code size
  // (and JIT time) for no speed.
  CountedLoopShape shape;
  shape.disableUnroll = true;
  return emitCountedLoop(builder_, shape, begin, end, step, initial, body);
}

void GemmIRBuilder::emitLoop(llvm::Value *begin, llvm::Value *end, int64_t step,
                             llvm::function_ref<void(llvm::Value *)> body) {
  emitLoop(begin, end, step, {}, [&](llvm::Value *iv, llvm::ArrayRef<llvm::Value *>) {
    body(iv);
    return std::vector<llvm::Value *>{};
  });
}

void GemmIRBuilder::emitIf(llvm::Value *condition, llvm::function_ref<void()> then,
                           llvm::function_ref<void()> otherwise) {
  // Conditions on specialized dims are constants: emit only the live side.
  if (auto *constant = llvm::dyn_cast<llvm::ConstantInt>(condition)) {
    if (!constant->isZero())
      then();
    else if (otherwise)
      otherwise();
    return;
  }
  llvm::LLVMContext &context = builder_.getContext();
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  auto *thenBlock = llvm::BasicBlock::Create(context, "if.then", function);
  auto *elseBlock = otherwise ? llvm::BasicBlock::Create(context, "if.else", function) : nullptr;
  auto *join = llvm::BasicBlock::Create(context, "if.end", function);
  builder_.CreateCondBr(condition, thenBlock, elseBlock ? elseBlock : join);
  builder_.SetInsertPoint(thenBlock);
  then();
  builder_.CreateBr(join);
  if (elseBlock) {
    builder_.SetInsertPoint(elseBlock);
    otherwise();
    builder_.CreateBr(join);
  }
  builder_.SetInsertPoint(join);
}

llvm::Value *GemmIRBuilder::floatAt(llvm::Value *base, llvm::Value *offset) {
  return builder_.CreateInBoundsGEP(floatType_, base, offset);
}

llvm::Value *GemmIRBuilder::min(llvm::Value *a, llvm::Value *b) {
  return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), a, b);
}

llvm::Value *GemmIRBuilder::laneMask(llvm::Value *width, int half) {
  if (auto *constant = llvm::dyn_cast<llvm::ConstantInt>(width))
    if (constant->getSExtValue() >= nr_)
      return nullptr;
  std::vector<llvm::Constant *> lanes;
  for (int64_t lane = 0; lane < lanes_; ++lane)
    lanes.push_back(builder_.getInt32(uint32_t(half * lanes_ + lane)));
  llvm::Value *clamped = builder_.CreateTrunc(min(width, index(nr_)), builder_.getInt32Ty());
  return builder_.CreateICmpSLT(llvm::ConstantVector::get(lanes),
                                builder_.CreateVectorSplat(unsigned(lanes_), clamped));
}

llvm::Value *GemmIRBuilder::loadVector(llvm::Value *pointer, llvm::Value *mask) {
  if (!mask)
    return builder_.CreateAlignedLoad(vectorType_, pointer, llvm::Align(4));
  return builder_.CreateMaskedLoad(vectorType_, pointer, llvm::Align(4), mask,
                                   llvm::Constant::getNullValue(vectorType_));
}

void GemmIRBuilder::storeVector(llvm::Value *value, llvm::Value *pointer, llvm::Value *mask) {
  if (!mask)
    builder_.CreateAlignedStore(value, pointer, llvm::Align(4));
  else
    builder_.CreateMaskedStore(value, pointer, llvm::Align(4), mask);
}

void GemmIRBuilder::emitPackFullPanel(llvm::Value *source, llvm::Value *lda, llvm::Value *panel,
                                      llvm::Value *depth) {
  // 8 k at a time, in groups of up to 8 rows: the group's 8-wide row loads,
  // an 8x8 transposition (rows past the group are don't-care) and eight
  // 8-wide stores, column by column across the groups. A short group's
  // store overruns into the next column's first floats, which that column's
  // first store (or the remainder loop) overwrites later; the buffer has
  // slack for the last column's overrun.
  const int64_t mr = mr_;
  llvm::Value *vectorEnd = builder_.CreateAnd(depth, index(~int64_t(7)));
  emitLoop(index(0), vectorEnd, 8, [&](llvm::Value *k) {
    std::vector<std::array<llvm::Value *, 8>> groups;
    for (int64_t first = 0; first < mr; first += 8) {
      std::array<llvm::Value *, 8> rows;
      for (int64_t r = 0; r < 8; ++r)
        rows[size_t(r)] =
            first + r < mr
                ? static_cast<llvm::Value *>(builder_.CreateAlignedLoad(
                      vector8Type_,
                      floatAt(source,
                              builder_.CreateAdd(builder_.CreateMul(index(first + r), lda), k)),
                      llvm::Align(4)))
                : llvm::PoisonValue::get(vector8Type_);
      groups.push_back(transpose8x8(builder_, rows));
    }
    llvm::Value *out = floatAt(panel, builder_.CreateMul(k, index(mr)));
    for (int64_t column = 0; column < 8; ++column)
      for (size_t group = 0; group < groups.size(); ++group)
        builder_.CreateAlignedStore(groups[group][size_t(column)],
                                    floatAt(out, index(column * mr + int64_t(group) * 8)),
                                    llvm::Align(4));
  });
  emitLoop(vectorEnd, depth, 1, [&](llvm::Value *k) {
    for (int64_t r = 0; r < mr; ++r) {
      llvm::Value *value = builder_.CreateLoad(
          floatType_, floatAt(source, builder_.CreateAdd(builder_.CreateMul(index(r), lda), k)));
      builder_.CreateStore(
          value, floatAt(panel, builder_.CreateAdd(builder_.CreateMul(k, index(mr)), index(r))));
    }
  });
}

void GemmIRBuilder::emitPackABlock(llvm::Value *a, llvm::Value *lda, llvm::Value *rows,
                                   llvm::Value *depth) {
  // Panel p holds rows [MR p, MR p + MR) k-major: element (r, k) at k*MR + r,
  // so the micro-kernel's MR broadcasts per k read one contiguous group.
  emitLoop(index(0), rows, mr_, [&](llvm::Value *panelRow) {
    llvm::Value *panel = floatAt(packedA_, builder_.CreateMul(panelRow, depth));
    llvm::Value *source = floatAt(a, builder_.CreateMul(panelRow, lda));
    llvm::Value *panelRows = min(index(mr_), builder_.CreateSub(rows, panelRow));
    emitIf(
        builder_.CreateICmpEQ(panelRows, index(mr_)),
        [&] { emitPackFullPanel(source, lda, panel, depth); },
        [&] {
          // Rows past the end are zeros, so the tile computes them harmlessly.
          builder_.CreateMemSet(panel, builder_.getInt8(0),
                                builder_.CreateMul(depth, index(mr_ * 4)), llvm::Align(4));
          emitLoop(index(0), panelRows, 1, [&](llvm::Value *r) {
            emitLoop(index(0), depth, 1, [&](llvm::Value *k) {
              llvm::Value *value = builder_.CreateLoad(
                  floatType_, floatAt(source, builder_.CreateAdd(builder_.CreateMul(r, lda), k)));
              builder_.CreateStore(
                  value, floatAt(panel, builder_.CreateAdd(builder_.CreateMul(k, index(mr_)), r)));
            });
          });
        });
  });
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
    value = emitActivation(builder_, value, epilogue.activation);
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

void GemmIRBuilder::emitPanelColumn(const GemmOperands &operands, const GemmEpilogue &epilogue,
                                    llvm::Value *aBlock, llvm::Value *rowBlock, llvm::Value *rows,
                                    llvm::Value *depth, llvm::Value *bPanel, llvm::Value *col,
                                    llvm::Value *isFirst, llvm::Value *isLast, bool fullWidth) {
  llvm::Value *width = fullWidth ? index(nr_) : builder_.CreateSub(operands.n, col);
  // The next panel in memory (the next column's, or the next K block's
  // first) is read next. Weights larger than L3 (ViT-base's are 344 MB)
  // come from DRAM, slower than a tile's k loop reads them (a line per 6
  // cycles), which the first tile of each panel paid in full. So the tiles
  // of a panel bring the next one to L2 between them: per iteration of the
  // k loop a tile prefetches `perStep` of the `stepLines` lines the
  // iteration reads, `spread` lines apart, from an offset cycling with the
  // tile; `spread` tiles cover the panel.
  //
  // As few prefetches as still cover the panel: each one in flight holds
  // a line fill buffer the tile's own loads then wait for. On Sapphire
  // Rapids, ViT-base (one thread, interleaved A/B runs) ran 5% faster with
  // one prefetch per 8 lines read than with one per 4, and 1-3% faster
  // again (three A/Bs) with one per 16 (17-tile blocks). A duplicate
  // prefetch of a line already requested cost as much as a new one, so
  // each density has its own tile loop, chosen per row block: the sparsest
  // whose spread the block's full tiles reach, down to covering the panel
  // in 4 tiles, as every block did before.
  //
  // The tile at `tileRow`: its A rows, or its panel of the packed A block.
  auto aTileAt = [&](llvm::Value *tileRow) {
    // Rows past the block's end read its last row again: a tail tile's
    // kernel then runs on valid memory, and its extra rows are not stored.
    // In full tiles the clamp changes nothing, but it keeps the twelve row
    // addresses opaque to LLVM: with a run-time lda, rows r * lda apart got
    // chained through one another, and the k loop hoisted and spilled its
    // broadcasts (197x768x768 in onnxc_bench_gemm at 55% of peak, not 85%).
    llvm::Value *last = builder_.CreateSub(builder_.CreateSub(rows, tileRow), index(1));
    ATile aTile;
    if (blocking_.packA) {
      aTile.panel = floatAt(packedA_, builder_.CreateMul(tileRow, depth));
      return aTile;
    }
    for (int64_t r = 0; r < mr_; ++r) {
      llvm::Value *inTile = r == 0 ? index(0) : min(index(r), last);
      aTile.rows[size_t(r)] =
          floatAt(aBlock, builder_.CreateMul(builder_.CreateAdd(tileRow, inTile), operands.lda));
    }
    return aTile;
  };
  // Prefetches of `perStep` lines per iteration of an `unroll`-k loop, from
  // the tile's offset among `spread` (the iteration's lines / perStep)
  // tiles. The densest covers the panel in 4 tiles.
  auto prefetchFor = [&](llvm::Value *tileRow, int64_t unroll, int64_t perStep) {
    const int64_t spread = unroll * nr_ / 16 / perStep;
    llvm::Value *line =
        builder_.CreateAnd(builder_.CreateSDiv(tileRow, index(mr_)), index(spread - 1));
    PanelPrefetch prefetch;
    prefetch.first = floatAt(bPanel, builder_.CreateAdd(builder_.CreateMul(depth, index(nr_)),
                                                        builder_.CreateMul(line, index(16))));
    prefetch.lines = perStep;
    prefetch.spacing = spread * 16;
    return prefetch;
  };
  auto densestPerStep = [&](int64_t unroll) { return std::max<int64_t>(1, unroll * nr_ / 16 / 4); };

  // The full tiles, which store straight from the accumulators.
  llvm::Value *fullRows = builder_.CreateSub(rows, builder_.CreateSRem(rows, index(mr_)));
  const int64_t stepLines = unroll_ * nr_ / 16;
  const int64_t densest = densestPerStep(unroll_);
  auto fullTiles = [&](int64_t perStep) {
    emitLoop(index(0), fullRows, mr_, [&](llvm::Value *tileRow) {
      llvm::Value *row = builder_.CreateAdd(rowBlock, tileRow);
      emitPrefetchTile(operands, row, col);
      Accumulators acc = emitMicroKernel(aTileAt(tileRow), bPanel, depth, unroll_,
                                         prefetchFor(tileRow, unroll_, perStep), mr_);
      emitIf(
          isLast,
          [&] { emitFullTileStore(operands, epilogue, acc, row, col, width, isFirst, true); },
          [&] { emitFullTileStore(operands, epilogue, acc, row, col, width, isFirst, false); });
    });
  };
  std::function<void(int64_t)> densityFrom = [&](int64_t perStep) {
    if (perStep >= densest)
      return fullTiles(densest);
    emitIf(
        builder_.CreateICmpSGE(fullRows, index(stepLines / perStep * mr_)),
        [&] { fullTiles(perStep); }, [&] { densityFrom(perStep * 2); });
  };
  densityFrom(1);

  // The row tail, through an MR-row tile scratch and a loop over the valid
  // rows: up to 3 rows take a kernel of that many rows, and a 12-row tile's
  // tails of up to 6 rows a 6-row kernel. One tile per panel: its k loop is
  // unrolled by 4 (less code), and it prefetches as densely as before.
  emitIf(builder_.CreateICmpSLT(fullRows, rows), [&] {
    llvm::Value *tileRow = fullRows;
    llvm::Value *row = builder_.CreateAdd(rowBlock, tileRow);
    llvm::Value *tileRows = builder_.CreateSub(rows, tileRow);
    emitPrefetchTile(operands, row, col);
    ATile aTile = aTileAt(tileRow);
    constexpr int64_t tailUnroll = 4;
    PanelPrefetch prefetch = prefetchFor(tileRow, tailUnroll, densestPerStep(tailUnroll));
    auto toScratch = [&](int64_t kernelRows) {
      Accumulators acc = emitMicroKernel(aTile, bPanel, depth, tailUnroll, prefetch, kernelRows);
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
    emitIf(
        isLast,
        [&] { emitTileStore(operands, epilogue, row, tileRows, col, width, isFirst, true); },
        [&] { emitTileStore(operands, epilogue, row, tileRows, col, width, isFirst, false); });
  });
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

void GemmIRBuilder::emitBlockedGemm(const GemmOperands &operands, const GemmEpilogue &epilogue) {
  llvm::Value *nPadded = builder_.CreateMul(
      builder_.CreateSDiv(builder_.CreateAdd(operands.n, index(nr_ - 1)), index(nr_)), index(nr_));
  llvm::Value *fullPanels = builder_.CreateSDiv(operands.n, index(nr_));
  llvm::Value *tailCol = builder_.CreateMul(fullPanels, index(nr_));
  // The column range: whole panels [firstPanel, panelsEnd), and the tail
  // panel when the range reaches N.
  llvm::Value *colBegin = operands.colBegin ? operands.colBegin : index(0);
  llvm::Value *colEnd = operands.colEnd ? operands.colEnd : operands.n;
  llvm::Value *firstPanel = builder_.CreateSDiv(colBegin, index(nr_));
  llvm::Value *panelsEnd = min(builder_.CreateSDiv(colEnd, index(nr_)), fullPanels);
  llvm::Value *withTail = builder_.CreateAnd(builder_.CreateICmpNE(tailCol, operands.n),
                                             builder_.CreateICmpSGE(colEnd, operands.n));
  emitLoop(index(0), operands.k, blocking_.kc, [&](llvm::Value *kBlock) {
    llvm::Value *depth = min(index(blocking_.kc), builder_.CreateSub(operands.k, kBlock));
    llvm::Value *bBlock = floatAt(operands.packedB, builder_.CreateMul(kBlock, nPadded));
    llvm::Value *isFirst = builder_.CreateICmpEQ(kBlock, index(0));
    llvm::Value *isLast = builder_.CreateICmpEQ(builder_.CreateAdd(kBlock, depth), operands.k);
    // A K known to be one block: every store is the first and the last, so
    // it neither reads C back nor needs the non-epilogue copy of its code.
    if (auto *k = llvm::dyn_cast<llvm::ConstantInt>(operands.k);
        k && k->getSExtValue() <= blocking_.kc)
      isFirst = isLast = builder_.getTrue();
    // Blocks of mc rows, except that the last takes a remainder of under
    // mc/2 rows with it: every block streams all of B (from L3 once B
    // outgrows L2) however few rows it has, so ViT's 197 rows run as
    // 96 + 101, not 96 + 96 + 5.
    const int64_t mc = blocking_.mc;
    llvm::Value *total = builder_.CreateSub(operands.rowEnd, operands.rowBegin);
    llvm::Value *remainder = builder_.CreateSRem(total, index(mc));
    llvm::Value *merge = builder_.CreateAnd(builder_.CreateICmpSLT(remainder, index(mc / 2)),
                                            builder_.CreateICmpSGE(total, index(mc)));
    llvm::Value *blocksEnd = builder_.CreateSelect(
        merge, builder_.CreateSub(operands.rowEnd, remainder), operands.rowEnd);
    emitLoop(operands.rowBegin, blocksEnd, mc, [&](llvm::Value *rowBlock) {
      llvm::Value *rows = builder_.CreateSelect(
          builder_.CreateICmpSGE(builder_.CreateAdd(rowBlock, index(mc)), blocksEnd),
          builder_.CreateSub(operands.rowEnd, rowBlock), index(mc));
      llvm::Value *aBlock = floatAt(
          operands.a, builder_.CreateAdd(builder_.CreateMul(rowBlock, operands.lda), kBlock));
      if (blocking_.packA)
        emitPackABlock(aBlock, operands.lda, rows, depth);
      // One or two rows (a decoder's step) stream B once, memory-bound:
      // panels go four side by side, four streams in flight instead of one.
      llvm::Value *fewRows = builder_.CreateICmpSLE(rows, index(kMaxGroupRows));
      llvm::Value *rangePanels = builder_.CreateSub(panelsEnd, firstPanel);
      llvm::Value *groupedEnd = builder_.CreateAdd(
          firstPanel, builder_.CreateSelect(
                          fewRows,
                          builder_.CreateMul(builder_.CreateSDiv(rangePanels, index(kGroupPanels)),
                                             index(kGroupPanels)),
                          index(0)));
      emitIf(builder_.CreateICmpSGT(groupedEnd, firstPanel), [&] {
        auto groups = [&](int64_t groupRows) {
          emitLoop(firstPanel, groupedEnd, kGroupPanels, [&](llvm::Value *panel) {
            llvm::Value *col = builder_.CreateMul(panel, index(nr_));
            emitPanelGroup(operands, epilogue, aBlock, rowBlock, groupRows, depth,
                           floatAt(bBlock, builder_.CreateMul(col, depth)), col, isFirst, isLast);
          });
        };
        emitIf(
            builder_.CreateICmpEQ(rows, index(1)), [&] { groups(1); }, [&] { groups(2); });
      });
      emitLoop(groupedEnd, panelsEnd, 1, [&](llvm::Value *panel) {
        llvm::Value *col = builder_.CreateMul(panel, index(nr_));
        emitPanelColumn(operands, epilogue, aBlock, rowBlock, rows, depth,
                        floatAt(bBlock, builder_.CreateMul(col, depth)), col, isFirst, isLast,
                        /*fullWidth=*/true);
      });
      emitIf(withTail, [&] {
        emitPanelColumn(operands, epilogue, aBlock, rowBlock, rows, depth,
                        floatAt(bBlock, builder_.CreateMul(tailCol, depth)), tailCol, isFirst,
                        isLast, /*fullWidth=*/false);
      });
    });
  });
}

void GemmIRBuilder::emitPackB(llvm::Value *b, llvm::Value *ldb, llvm::Value *k, llvm::Value *n,
                              bool transposed, llvm::Value *out) {
  llvm::Value *nPadded = builder_.CreateMul(
      builder_.CreateSDiv(builder_.CreateAdd(n, index(nr_ - 1)), index(nr_)), index(nr_));
  emitLoop(index(0), k, blocking_.kc, [&](llvm::Value *kBlock) {
    llvm::Value *depth = min(index(blocking_.kc), builder_.CreateSub(k, kBlock));
    llvm::Value *block = floatAt(out, builder_.CreateMul(kBlock, nPadded));
    emitLoop(index(0), nPadded, nr_, [&](llvm::Value *panelCol) {
      llvm::Value *panel = floatAt(block, builder_.CreateMul(panelCol, depth));
      llvm::Value *width = min(index(nr_), builder_.CreateSub(n, panelCol));
      if (!transposed) {
        // Rows of B are contiguous: two (masked) vector copies per k.
        std::array<llvm::Value *, 2> masks = {laneMask(width, 0), laneMask(width, 1)};
        emitLoop(index(0), depth, 1, [&](llvm::Value *r) {
          llvm::Value *source =
              floatAt(b, builder_.CreateAdd(builder_.CreateMul(builder_.CreateAdd(kBlock, r), ldb),
                                            panelCol));
          llvm::Value *target = floatAt(panel, builder_.CreateMul(r, index(nr_)));
          for (int half = 0; half < 2; ++half)
            storeVector(loadVector(floatAt(source, index(half * lanes_)), masks[half]),
                        floatAt(target, index(half * lanes_)), nullptr);
        });
        return;
      }
      // B^T: each panel column is a contiguous run of k in the source.
      emitIf(builder_.CreateICmpSLT(width, index(nr_)), [&] {
        builder_.CreateMemSet(panel, builder_.getInt8(0), builder_.CreateMul(depth, index(nr_ * 4)),
                              llvm::Align(4));
      });
      emitLoop(index(0), width, 1, [&](llvm::Value *j) {
        llvm::Value *source =
            floatAt(b, builder_.CreateAdd(builder_.CreateMul(builder_.CreateAdd(panelCol, j), ldb),
                                          kBlock));
        emitLoop(index(0), depth, 1, [&](llvm::Value *r) {
          llvm::Value *value = builder_.CreateLoad(floatType_, floatAt(source, r));
          builder_.CreateStore(
              value, floatAt(panel, builder_.CreateAdd(builder_.CreateMul(r, index(nr_)), j)));
        });
      });
    });
  });
}

} // namespace onnxc
