//===- codegen/kernels/GemmIRBuilder.cpp - Loop-nest emission shared by GEMM kernels -===//
#include "codegen/kernels/GemmIRBuilder.h"

#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/VectorTranspose.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Intrinsics.h"

namespace onnxc {

GemmIRBuilder::GemmIRBuilder(llvm::Function &function, const GemmBlocking &blocking)
    : builder_(llvm::BasicBlock::Create(function.getContext(), "entry", &function)),
      blocking_(blocking) {
  floatType_ = builder_.getFloatTy();
  lanes_ = blocking.lanes;
  nr_ = blocking.nr();
  mr_ = blocking.mr();
  // k unrolled by 4 at either width: an iteration reads 4 lines of a B
  // panel with 8 lanes and 8 with 16. Unrolling the 16-lane tile by 8 (one
  // prefetch per 16 lines at the sparsest) ran no faster (Emerald Rapids,
  // onnxc_bench_gemm with warm and cold weights, 197-512 x 768-3072: within
  // the runs' noise), and LLVM's loop strength reduction, superlinear in a
  // loop's address uses, took 8.4 of llc's 10.8 s on a 4-layer LLaMA's
  // module (3.5 of 5.2 unrolled by 4; aTileAt takes most of the rest).
  unroll_ = 4;
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
  const bool madePanels = bool(operands.panelSource);
  prefetchPanels_ = !madePanels;
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
      auto panelAt = [&](llvm::Value *panel, llvm::Value *col) {
        return madePanels ? operands.panelSource(kBlock, depth, panel)
                          : floatAt(bBlock, builder_.CreateMul(col, depth));
      };
      // One or two rows (a decoder's step) stream B once, memory-bound:
      // panels go four side by side, four streams in flight instead of one.
      llvm::Value *groupedEnd = firstPanel;
      if (!madePanels) {
        llvm::Value *fewRows = builder_.CreateICmpSLE(rows, index(kMaxGroupRows));
        llvm::Value *rangePanels = builder_.CreateSub(panelsEnd, firstPanel);
        groupedEnd = builder_.CreateAdd(
            firstPanel,
            builder_.CreateSelect(
                fewRows,
                builder_.CreateMul(builder_.CreateSDiv(rangePanels, index(kGroupPanels)),
                                   index(kGroupPanels)),
                index(0)));
        emitIf(builder_.CreateICmpSGT(groupedEnd, firstPanel), [&] {
          auto groups = [&](int64_t groupRows) {
            emitLoop(firstPanel, groupedEnd, kGroupPanels, [&](llvm::Value *panel) {
              llvm::Value *col = builder_.CreateMul(panel, index(nr_));
              emitPanelGroup(operands, epilogue, aBlock, rowBlock, groupRows, depth,
                             panelAt(panel, col), col, isFirst, isLast);
            });
          };
          emitIf(
              builder_.CreateICmpEQ(rows, index(1)), [&] { groups(1); }, [&] { groups(2); });
        });
      }
      emitLoop(groupedEnd, panelsEnd, 1, [&](llvm::Value *panel) {
        llvm::Value *col = builder_.CreateMul(panel, index(nr_));
        emitPanelColumn(operands, epilogue, aBlock, rowBlock, rows, depth, panelAt(panel, col), col,
                        isFirst, isLast, /*fullWidth=*/true);
      });
      emitIf(withTail, [&] {
        emitPanelColumn(operands, epilogue, aBlock, rowBlock, rows, depth,
                        panelAt(fullPanels, tailCol), tailCol, isFirst, isLast,
                        /*fullWidth=*/false);
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
