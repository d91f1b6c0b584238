//===- codegen/kernels/Bf16GemmEmitter.cpp - LLVM IR of the bf16 GEMM -----===//
//
// The loop nest of every Bf16GemmIsa (Bf16Gemm.h):
//
//   [Amx] configure the tiles when the range has kAmxMinRows rows or more
//   for each block of blockRows rows of A
//     convert the block to bf16 rows of kPadded values (stack, zero padded)
//     for each 32-column panel of B in [colBegin, colEnd)
//       [Amx] each 32-row tile (the last one over zero rows when 3-31 rows
//             remain): C in tiles 0-3 over K (the next panel and the tile's
//             C lines prefetched), then either stored straight into C (a
//             whole tile whose epilogue is at most a bias, which the tiles
//             start from) or stored to a 32 x 32 scratch and through the
//             epilogue into C
//       the remaining rows in 12-row vector tiles, then one tile of 1, 2, 4,
//       8 or 12 rows for the last of them (its extra rows read the block's
//       zero padding and are not stored); a 1-2-row step prefetches B ahead
//   [Amx] release the tiles
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Bf16Gemm.h"

#include "codegen/kernels/AmxTiles.h"
#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/GemmIRBuilder.h"
#include "ir/Error.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <array>
#include <vector>

namespace onnxc {
namespace {

constexpr int64_t kLanes = 16;         // f32 lanes of a zmm; columns per tile half
constexpr int64_t kPanel = 2 * kLanes; // columns per packed panel
constexpr int64_t kAmxRows = 32;       // rows of C per AMX tile group (2 x 16)
constexpr int64_t kVectorRows = 12;    // rows of a vector tile (24 accumulators)
constexpr int64_t kRowPadding = 4;     // zero rows after a block (the tail tile's overrun)
// Rows from which a short last group takes a whole AMX tile over zero rows:
// a 32-row tile costs about what 3 rows cost on VDPBF16PS (Sapphire Rapids:
// ~1,100 against ~95 GFLOP/s). Fewer rows, a decoder's step, stay on vectors.
constexpr int64_t kAmxMinRows = 3;
// A decoder's step reads B this many bytes ahead of its loads: 8 pair rows
// (GPT-2 small decode at bf16, Sapphire Rapids: 23.2 ms/token without,
// 20.2-20.7 at 512-1024 bytes, 21.5 at 2048, 22.4 at 4096).
constexpr int64_t kPrefetchAhead = 1024;
constexpr std::array<int64_t, 5> kTileVariants = {1, 2, 4, 8, kVectorRows};

/// The kernel's arguments, in Bf16GemmFn's order.
struct Arguments {
  llvm::Value *a, *lda, *packedB, *c, *ldc, *rowBegin, *rowEnd, *bias, *residual, *ldResidual,
      *colBegin, *colEnd;
};

class Bf16GemmIR {
public:
  Bf16GemmIR(llvm::Function &function, const Bf16GemmSpec &spec);
  void emit(const Arguments &args);

private:
  llvm::Value *i64(int64_t value) { return ir_.getInt64(value); }
  llvm::Value *min(llvm::Value *a, llvm::Value *b) {
    return ir_.CreateSelect(ir_.CreateICmpSLT(a, b), a, b);
  }
  llvm::Value *at(llvm::Type *type, llvm::Value *base, llvm::Value *offset) {
    return ir_.CreateGEP(type, base, offset);
  }
  void loop(llvm::Value *begin, llvm::Value *end, int64_t step,
            llvm::function_ref<void(llvm::Value *)> body);
  void ifThen(llvm::Value *condition, llvm::function_ref<void()> then);
  void ifThenElse(llvm::Value *condition, llvm::function_ref<void()> then,
                  llvm::function_ref<void()> otherwise);
  void callX86(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value *> operands);

  /// Rounds 16 floats to bf16 (nearest even, NaN kept quiet): <16 x i16>.
  llvm::Value *roundToBf16(llvm::Value *floats);
  /// Rows [row, row + rows) of A into the bf16 block, zero padded to
  /// `padded` rows (and kRowPadding more).
  void packBlock(const Arguments &args, llvm::Value *row, llvm::Value *rows, llvm::Value *padded);
  /// Rounds 16 floats to bf16: VCVTNEPS2BF16 where the kernel has it (its
  /// flushing of denormal inputs is what the products do to them anyway),
  /// else roundToBf16.
  llvm::Value *convert(llvm::Value *floats);

  /// Lanes of half `half` of a panel that are < width.
  llvm::Value *laneMask(llvm::Value *width, int half);
  /// The epilogue of 16 sums at (row, col + 16 half), stored into C.
  void storeHalf(const Arguments &args, llvm::Value *sums, llvm::Value *row, llvm::Value *col,
                 int half, llvm::Value *mask);

  void configureTiles();
  /// 32 rows at block row `tileRow` (C rows from `row`), columns of `panel`,
  /// prefetching into L2 `perStep` lines per k step of `nextPanel` from line
  /// `firstLine` on. Into the scratch; or, with `direct` (a whole 32 x 32
  /// tile when the epilogue is at most a bias: directTiles()), starting from
  /// the bias (or zero) and stored straight into C.
  void amxTile(llvm::Value *tileRow, llvm::Value *panel, llvm::Value *nextPanel,
               llvm::Value *firstLine, llvm::Value *perStep, const Arguments &args,
               llvm::Value *row, llvm::Value *col, bool direct);
  bool directTiles() const {
    return spec_.epilogue.activation == GemmActivation::None && !spec_.epilogue.residual;
  }
  /// Prefetches line `line` (of 64: 32 rows x 2) of the C tile at (row,
  /// col) for writing, and of the residual's for reading.
  void prefetchOutputLine(const Arguments &args, llvm::Value *row, llvm::Value *col,
                          llvm::Value *line);
  /// Rows of the scratch through the epilogue: `rows` rows from `row`.
  void storeScratch(const Arguments &args, llvm::Value *row, llvm::Value *rows, llvm::Value *col,
                    std::array<llvm::Value *, 2> masks);
  /// A `tileRows`-row vector tile at block row `tileRow`, storing its first
  /// `validRows` rows (all when null).
  void vectorTile(const Arguments &args, int64_t tileRows, llvm::Value *tileRow,
                  llvm::Value *blockRow, llvm::Value *panel, llvm::Value *col,
                  std::array<llvm::Value *, 2> masks, llvm::Value *validRows);
  /// One k pair of a vector tile's accumulators.
  llvm::Value *dotPair(llvm::Value *acc, llvm::Value *aPair, llvm::Value *bPairs);
  /// Rows [first, rows) of the block, by vector tiles.
  void vectorRows(const Arguments &args, llvm::Value *first, llvm::Value *rows,
                  llvm::Value *blockRow, llvm::Value *panel, llvm::Value *col,
                  std::array<llvm::Value *, 2> masks);

  llvm::IRBuilder<> ir_;
  llvm::Module &module_;
  Bf16GemmSpec spec_;
  int64_t kPadded_, blockRows_;
  llvm::Type *f32_, *i16_, *i32_;
  llvm::VectorType *floats_, *ints_;
  llvm::Value *aBlock_ = nullptr, *scratch_ = nullptr, *tileConfig_ = nullptr;
};

Bf16GemmIR::Bf16GemmIR(llvm::Function &function, const Bf16GemmSpec &spec)
    : ir_(llvm::BasicBlock::Create(function.getContext(), "entry", &function)),
      module_(*function.getParent()), spec_(spec), kPadded_(bf16GemmPaddedDepth(spec.k)),
      blockRows_(bf16GemmBlockRows(spec.k)) {
  f32_ = ir_.getFloatTy();
  i16_ = ir_.getInt16Ty();
  i32_ = ir_.getInt32Ty();
  floats_ = llvm::FixedVectorType::get(f32_, kLanes);
  ints_ = llvm::FixedVectorType::get(i32_, kLanes);
  auto buffer = [&](llvm::Type *element, int64_t count, const char *name) {
    auto *alloca = ir_.CreateAlloca(llvm::ArrayType::get(element, uint64_t(count)), nullptr, name);
    alloca->setAlignment(llvm::Align(64));
    return alloca;
  };
  aBlock_ = buffer(i16_, (blockRows_ + kRowPadding) * kPadded_, "aBlock"); // see packBlock
  scratch_ = buffer(f32_, kAmxRows * kPanel, "tile");
  if (spec_.isa == Bf16GemmIsa::Amx)
    tileConfig_ = buffer(ir_.getInt8Ty(), 64, "tileConfig");
}

void Bf16GemmIR::loop(llvm::Value *begin, llvm::Value *end, int64_t step,
                      llvm::function_ref<void(llvm::Value *)> body) {
  CountedLoopShape shape;
  shape.disableUnroll = true;
  emitCountedLoop(ir_, shape, begin, end, step, {},
                  [&](llvm::Value *iv, llvm::ArrayRef<llvm::Value *>) {
                    body(iv);
                    return std::vector<llvm::Value *>{};
                  });
}

void Bf16GemmIR::ifThenElse(llvm::Value *condition, llvm::function_ref<void()> then,
                            llvm::function_ref<void()> otherwise) {
  llvm::Function *function = ir_.GetInsertBlock()->getParent();
  auto *thenBlock = llvm::BasicBlock::Create(function->getContext(), "then", function);
  auto *elseBlock = llvm::BasicBlock::Create(function->getContext(), "else", function);
  auto *done = llvm::BasicBlock::Create(function->getContext(), "endif", function);
  ir_.CreateCondBr(condition, thenBlock, elseBlock);
  ir_.SetInsertPoint(thenBlock);
  then();
  ir_.CreateBr(done);
  ir_.SetInsertPoint(elseBlock);
  otherwise();
  ir_.CreateBr(done);
  ir_.SetInsertPoint(done);
}

void Bf16GemmIR::ifThen(llvm::Value *condition, llvm::function_ref<void()> then) {
  llvm::Function *function = ir_.GetInsertBlock()->getParent();
  auto *thenBlock = llvm::BasicBlock::Create(function->getContext(), "then", function);
  auto *done = llvm::BasicBlock::Create(function->getContext(), "endif", function);
  ir_.CreateCondBr(condition, thenBlock, done);
  ir_.SetInsertPoint(thenBlock);
  then();
  ir_.CreateBr(done);
  ir_.SetInsertPoint(done);
}

void Bf16GemmIR::callX86(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value *> operands) {
  ir_.CreateCall(llvm::Intrinsic::getDeclaration(&module_, id), operands);
}

llvm::Value *Bf16GemmIR::roundToBf16(llvm::Value *floats) {
  // As floatToBfloat16 (ir/DType.cpp), lane-wise: every path sees the same A.
  auto splat = [&](uint32_t v) { return ir_.CreateVectorSplat(kLanes, ir_.getInt32(v)); };
  llvm::Value *bits = ir_.CreateBitCast(floats, ints_);
  llvm::Value *high = ir_.CreateLShr(bits, splat(16));
  llvm::Value *isNan = ir_.CreateICmpUGT(ir_.CreateAnd(bits, splat(0x7fffffff)), splat(0x7f800000));
  llvm::Value *rounded =
      ir_.CreateAdd(bits, ir_.CreateAdd(splat(0x7fff), ir_.CreateAnd(high, splat(1))));
  llvm::Value *result =
      ir_.CreateSelect(isNan, ir_.CreateOr(high, splat(0x40)), ir_.CreateLShr(rounded, splat(16)));
  return ir_.CreateTrunc(result, llvm::FixedVectorType::get(i16_, kLanes));
}

llvm::Value *Bf16GemmIR::convert(llvm::Value *floats) {
  if (spec_.isa == Bf16GemmIsa::Portable)
    return roundToBf16(floats);
  llvm::Value *halves = ir_.CreateCall(
      llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::x86_avx512bf16_cvtneps2bf16_512),
      {floats});
  return ir_.CreateBitCast(halves, llvm::FixedVectorType::get(i16_, kLanes));
}

void Bf16GemmIR::packBlock(const Arguments &args, llvm::Value *row, llvm::Value *rows,
                           llvm::Value *padded) {
  const int64_t k = spec_.k, fullVectors = k / kLanes, tail = k % kLanes;
  llvm::Type *halfs = llvm::FixedVectorType::get(i16_, kLanes);
  loop(i64(0), rows, 1, [&](llvm::Value *r) {
    llvm::Value *source = at(f32_, args.a, ir_.CreateMul(ir_.CreateAdd(row, r), args.lda));
    llvm::Value *target = at(i16_, aBlock_, ir_.CreateMul(r, i64(kPadded_)));
    loop(i64(0), i64(fullVectors * kLanes), kLanes, [&](llvm::Value *col) {
      llvm::Value *values = ir_.CreateAlignedLoad(floats_, at(f32_, source, col), llvm::Align(4));
      ir_.CreateAlignedStore(convert(values), at(i16_, target, col), llvm::Align(2));
    });
    int64_t written = fullVectors * kLanes;
    if (tail) {
      std::vector<llvm::Constant *> lanes;
      for (int64_t lane = 0; lane < kLanes; ++lane)
        lanes.push_back(ir_.getInt1(lane < tail));
      llvm::Value *values = ir_.CreateMaskedLoad(floats_, at(f32_, source, i64(written)),
                                                 llvm::Align(4), llvm::ConstantVector::get(lanes),
                                                 llvm::Constant::getNullValue(floats_));
      ir_.CreateAlignedStore(convert(values), at(i16_, target, i64(written)), llvm::Align(2));
      written += kLanes;
    }
    for (; written < kPadded_; written += kLanes)
      ir_.CreateAlignedStore(llvm::Constant::getNullValue(halfs), at(i16_, target, i64(written)),
                             llvm::Align(2));
  });
  // A short AMX tile reads zero rows up to `padded`, the vector tail tile up
  // to kRowPadding rows past the block's last.
  llvm::Value *zeroRows = ir_.CreateAdd(ir_.CreateSub(padded, rows), i64(kRowPadding));
  ir_.CreateMemSet(at(i16_, aBlock_, ir_.CreateMul(rows, i64(kPadded_))), ir_.getInt8(0),
                   ir_.CreateMul(zeroRows, i64(kPadded_ * 2)), llvm::Align(2));
}

llvm::Value *Bf16GemmIR::laneMask(llvm::Value *width, int half) {
  std::vector<llvm::Constant *> lanes;
  for (int64_t lane = 0; lane < kLanes; ++lane)
    lanes.push_back(ir_.getInt32(uint32_t(half * kLanes + lane)));
  llvm::Value *clamped = ir_.CreateTrunc(min(width, i64(kPanel)), i32_);
  return ir_.CreateICmpSLT(llvm::ConstantVector::get(lanes),
                           ir_.CreateVectorSplat(kLanes, clamped));
}

void Bf16GemmIR::storeHalf(const Arguments &args, llvm::Value *sums, llvm::Value *row,
                           llvm::Value *col, int half, llvm::Value *mask) {
  llvm::Value *column = ir_.CreateAdd(col, i64(half * kLanes));
  auto load = [&](llvm::Value *pointer) {
    return ir_.CreateMaskedLoad(floats_, pointer, llvm::Align(4), mask,
                                llvm::Constant::getNullValue(floats_));
  };
  const GemmEpilogue &epilogue = spec_.epilogue;
  if (epilogue.bias)
    sums = ir_.CreateFAdd(sums, load(at(f32_, args.bias, column)));
  sums = emitGemmActivation(ir_, sums, epilogue.activation);
  if (epilogue.residual)
    sums = ir_.CreateFAdd(
        sums,
        load(at(f32_, args.residual, ir_.CreateAdd(ir_.CreateMul(row, args.ldResidual), column))));
  ir_.CreateMaskedStore(sums, at(f32_, args.c, ir_.CreateAdd(ir_.CreateMul(row, args.ldc), column)),
                        llvm::Align(4), mask);
}

void Bf16GemmIR::configureTiles() { emitAmxTileConfig(ir_, tileConfig_); }

void Bf16GemmIR::prefetchOutputLine(const Arguments &args, llvm::Value *row, llvm::Value *col,
                                    llvm::Value *line) {
  llvm::Function *prefetch =
      llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::prefetch, {ir_.getPtrTy()});
  llvm::Value *outRow = ir_.CreateAdd(row, ir_.CreateLShr(line, i64(1)));
  llvm::Value *column = ir_.CreateAdd(col, ir_.CreateMul(ir_.CreateAnd(line, i64(1)), i64(kLanes)));
  ir_.CreateCall(prefetch,
                 {at(f32_, args.c, ir_.CreateAdd(ir_.CreateMul(outRow, args.ldc), column)),
                  ir_.getInt32(1), ir_.getInt32(3), ir_.getInt32(1)});
  if (spec_.epilogue.residual)
    ir_.CreateCall(prefetch, {at(f32_, args.residual,
                                 ir_.CreateAdd(ir_.CreateMul(outRow, args.ldResidual), column)),
                              ir_.getInt32(0), ir_.getInt32(3), ir_.getInt32(1)});
}

void Bf16GemmIR::amxTile(llvm::Value *tileRow, llvm::Value *panel, llvm::Value *nextPanel,
                         llvm::Value *firstLine, llvm::Value *perStep, const Arguments &args,
                         llvm::Value *row, llvm::Value *col, bool direct) {
  auto tile = [&](int number) { return ir_.getInt8(uint8_t(number)); };
  llvm::Function *prefetch =
      llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::prefetch, {ir_.getPtrTy()});
  for (int c = 0; c < 4; ++c) {
    if (direct && spec_.epilogue.bias) // every row of the tile is the bias (stride 0)
      callX86(llvm::Intrinsic::x86_tileloadd64,
              {tile(c), at(f32_, args.bias, ir_.CreateAdd(col, i64((c % 2) * kLanes))), i64(0)});
    else
      callX86(llvm::Intrinsic::x86_tilezero, {tile(c)});
  }
  llvm::Value *aRows = at(i16_, aBlock_, ir_.CreateMul(tileRow, i64(kPadded_)));
  llvm::Value *aStride = i64(kPadded_ * 2);
  // The tile's 64 lines of C (and of the residual) are written after the
  // k loop: a store that misses waits for its line, so the loop prefetches
  // them, a few per step (64 prefetches at once would fill the line buffers).
  const int64_t steps = kPadded_ / Bf16GemmDepthStep;
  const int64_t linesPerStep = (2 * kAmxRows + steps - 1) / steps;
  loop(i64(0), i64(kPadded_), Bf16GemmDepthStep, [&](llvm::Value *k) {
    llvm::Value *a0 = at(i16_, aRows, k);
    llvm::Value *a1 = at(i16_, a0, i64(16 * kPadded_));
    // 32 k are 16 pair rows of the panel, each kPanel pairs (2 * kPanel values).
    llvm::Value *b0 = at(i16_, panel, ir_.CreateMul(k, i64(kPanel)));
    llvm::Value *b1 = at(i16_, b0, i64(kPanel));
    // Each load just before the first product that reads it: tile
    // registers are not renamed, so a load waits for the last reader of
    // its tile, and this order lets a load overlap the products before it.
    callX86(llvm::Intrinsic::x86_tileloadd64, {tile(4), a0, aStride});
    callX86(llvm::Intrinsic::x86_tileloadd64, {tile(6), b0, i64(kPanel * 4)});
    callX86(llvm::Intrinsic::x86_tdpbf16ps, {tile(0), tile(4), tile(6)});
    callX86(llvm::Intrinsic::x86_tileloadd64, {tile(7), b1, i64(kPanel * 4)});
    callX86(llvm::Intrinsic::x86_tdpbf16ps, {tile(1), tile(4), tile(7)});
    callX86(llvm::Intrinsic::x86_tileloadd64, {tile(5), a1, aStride});
    callX86(llvm::Intrinsic::x86_tdpbf16ps, {tile(2), tile(5), tile(6)});
    callX86(llvm::Intrinsic::x86_tdpbf16ps, {tile(3), tile(5), tile(7)});
    llvm::Value *firstOutputLine =
        ir_.CreateMul(ir_.CreateSDiv(k, i64(Bf16GemmDepthStep)), i64(linesPerStep));
    loop(firstOutputLine, min(i64(2 * kAmxRows), ir_.CreateAdd(firstOutputLine, i64(linesPerStep))),
         1, [&](llvm::Value *outputLine) { prefetchOutputLine(args, row, col, outputLine); });
    // The tile unit waits for every line a tile load misses, and B comes
    // from L3 or DRAM when the weights outgrow L2: the row block's tiles
    // share the prefetch of the next panel.
    llvm::Value *step = ir_.CreateSDiv(k, i64(Bf16GemmDepthStep));
    llvm::Value *line = ir_.CreateAdd(firstLine, ir_.CreateMul(step, perStep));
    loop(i64(0), perStep, 1, [&](llvm::Value *j) {
      llvm::Value *address =
          at(ir_.getInt8Ty(), nextPanel, ir_.CreateMul(ir_.CreateAdd(line, j), i64(64)));
      ir_.CreateCall(prefetch, {address, ir_.getInt32(0), ir_.getInt32(2), ir_.getInt32(1)});
    });
  });
  for (int c = 0; c < 4; ++c) {
    if (direct) {
      llvm::Value *outRow = ir_.CreateAdd(row, i64((c / 2) * 16));
      llvm::Value *offset =
          ir_.CreateAdd(ir_.CreateMul(outRow, args.ldc), ir_.CreateAdd(col, i64((c % 2) * kLanes)));
      callX86(llvm::Intrinsic::x86_tilestored64,
              {tile(c), at(f32_, args.c, offset), ir_.CreateMul(args.ldc, i64(4))});
      continue;
    }
    int64_t offset = (c / 2) * 16 * kPanel + (c % 2) * kLanes;
    callX86(llvm::Intrinsic::x86_tilestored64,
            {tile(c), at(f32_, scratch_, i64(offset)), i64(kPanel * 4)});
  }
}

void Bf16GemmIR::storeScratch(const Arguments &args, llvm::Value *row, llvm::Value *rows,
                              llvm::Value *col, std::array<llvm::Value *, 2> masks) {
  loop(i64(0), rows, 1, [&](llvm::Value *r) {
    for (int half = 0; half < 2; ++half) {
      llvm::Value *offset = ir_.CreateAdd(ir_.CreateMul(r, i64(kPanel)), i64(half * kLanes));
      llvm::Value *sums =
          ir_.CreateAlignedLoad(floats_, at(f32_, scratch_, offset), llvm::Align(64));
      storeHalf(args, sums, ir_.CreateAdd(row, r), col, half, masks[size_t(half)]);
    }
  });
}

llvm::Value *Bf16GemmIR::dotPair(llvm::Value *acc, llvm::Value *aPair, llvm::Value *bPairs) {
  if (spec_.isa != Bf16GemmIsa::Portable) {
    auto *pairs = llvm::FixedVectorType::get(ir_.getBFloatTy(), 2 * kLanes);
    llvm::Value *a = ir_.CreateBitCast(ir_.CreateVectorSplat(kLanes, aPair), pairs);
    return ir_.CreateCall(
        llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512),
        {acc, a, ir_.CreateBitCast(bPairs, pairs)});
  }
  // VDPBF16PS's arithmetic: the odd product added, then the even one; each
  // product of two bf16 values is exact, so fused or not rounds the same.
  auto splat = [&](uint32_t v) { return ir_.CreateVectorSplat(kLanes, ir_.getInt32(v)); };
  auto even = [&](llvm::Value *pairs) {
    return ir_.CreateBitCast(ir_.CreateShl(pairs, splat(16)), floats_);
  };
  auto odd = [&](llvm::Value *pairs) {
    return ir_.CreateBitCast(ir_.CreateAnd(pairs, splat(0xffff0000u)), floats_);
  };
  llvm::Value *a = ir_.CreateVectorSplat(kLanes, aPair);
  acc = ir_.CreateFAdd(acc, ir_.CreateFMul(odd(a), odd(bPairs)));
  return ir_.CreateFAdd(acc, ir_.CreateFMul(even(a), even(bPairs)));
}

void Bf16GemmIR::vectorTile(const Arguments &args, int64_t tileRows, llvm::Value *tileRow,
                            llvm::Value *blockRow, llvm::Value *panel, llvm::Value *col,
                            std::array<llvm::Value *, 2> masks, llvm::Value *validRows) {
  std::vector<llvm::Value *> initial(size_t(2 * tileRows), llvm::Constant::getNullValue(floats_));
  llvm::Value *aRows = at(i16_, aBlock_, ir_.CreateMul(tileRow, i64(kPadded_)));
  CountedLoopShape shape;
  shape.disableUnroll = true;
  std::vector<llvm::Value *> acc = emitCountedLoop(
      ir_, shape, i64(0), i64(kPadded_ / 2), 1, initial,
      [&](llvm::Value *pair, llvm::ArrayRef<llvm::Value *> carried) {
        llvm::Value *bRow = at(i16_, panel, ir_.CreateMul(pair, i64(2 * kPanel)));
        // A decoder's step (1-2 rows) streams B from DRAM: both lines of the
        // pair row kPrefetchAhead bytes ahead are requested before they are read.
        if (tileRows <= 2) {
          llvm::Function *prefetch = llvm::Intrinsic::getDeclaration(
              &module_, llvm::Intrinsic::prefetch, {ir_.getPtrTy()});
          for (int line = 0; line < 2; ++line)
            ir_.CreateCall(prefetch, {at(ir_.getInt8Ty(), bRow, i64(kPrefetchAhead + 64 * line)),
                                      ir_.getInt32(0), ir_.getInt32(3), ir_.getInt32(1)});
        }
        std::array<llvm::Value *, 2> b;
        for (int half = 0; half < 2; ++half)
          b[size_t(half)] =
              ir_.CreateAlignedLoad(ints_, at(i16_, bRow, i64(half * 2 * kLanes)), llvm::Align(4));
        std::vector<llvm::Value *> next(carried.begin(), carried.end());
        for (int64_t r = 0; r < tileRows; ++r) {
          llvm::Value *aPair = ir_.CreateAlignedLoad(
              i32_, at(i16_, aRows, ir_.CreateAdd(i64(r * kPadded_), ir_.CreateMul(pair, i64(2)))),
              llvm::Align(4));
          for (int half = 0; half < 2; ++half)
            next[size_t(2 * r + half)] =
                dotPair(next[size_t(2 * r + half)], aPair, b[size_t(half)]);
        }
        return next;
      });
  for (int64_t r = 0; r < tileRows; ++r) {
    auto store = [&] {
      llvm::Value *row = ir_.CreateAdd(blockRow, ir_.CreateAdd(tileRow, i64(r)));
      for (int half = 0; half < 2; ++half)
        storeHalf(args, acc[size_t(2 * r + half)], row, col, half, masks[size_t(half)]);
    };
    if (validRows && r > 0)
      ifThen(ir_.CreateICmpSLT(i64(r), validRows), store);
    else
      store();
  }
}

void Bf16GemmIR::vectorRows(const Arguments &args, llvm::Value *first, llvm::Value *rows,
                            llvm::Value *blockRow, llvm::Value *panel, llvm::Value *col,
                            std::array<llvm::Value *, 2> masks) {
  llvm::Value *count = ir_.CreateSub(rows, first);
  llvm::Value *fullEnd = ir_.CreateAdd(
      first, ir_.CreateMul(ir_.CreateSDiv(count, i64(kVectorRows)), i64(kVectorRows)));
  loop(first, fullEnd, kVectorRows, [&](llvm::Value *tileRow) {
    vectorTile(args, kVectorRows, tileRow, blockRow, panel, col, masks, nullptr);
  });
  // The last rows: the smallest tile that covers them.
  llvm::Value *tail = ir_.CreateSub(rows, fullEnd);
  llvm::Function *function = ir_.GetInsertBlock()->getParent();
  auto *done = llvm::BasicBlock::Create(function->getContext(), "tail.done", function);
  int64_t covered = 0;
  for (int64_t variant : kTileVariants) {
    if (variant == kVectorRows)
      continue; // a whole tile never remains
    auto *body = llvm::BasicBlock::Create(function->getContext(), "tail.tile", function);
    auto *next = llvm::BasicBlock::Create(function->getContext(), "tail.next", function);
    llvm::Value *fits =
        ir_.CreateAnd(ir_.CreateICmpSGT(tail, i64(covered)), ir_.CreateICmpSLE(tail, i64(variant)));
    ir_.CreateCondBr(fits, body, next);
    ir_.SetInsertPoint(body);
    vectorTile(args, variant, fullEnd, blockRow, panel, col, masks, tail);
    ir_.CreateBr(done);
    ir_.SetInsertPoint(next);
    covered = variant;
  }
  auto *body = llvm::BasicBlock::Create(function->getContext(), "tail.tile", function);
  ir_.CreateCondBr(ir_.CreateICmpSGT(tail, i64(covered)), body, done);
  ir_.SetInsertPoint(body);
  vectorTile(args, kVectorRows, fullEnd, blockRow, panel, col, masks, tail);
  ir_.CreateBr(done);
  ir_.SetInsertPoint(done);
}

void Bf16GemmIR::emit(const Arguments &args) {
  const bool amx = spec_.isa == Bf16GemmIsa::Amx;
  llvm::Value *useTiles =
      amx ? ir_.CreateICmpSGE(ir_.CreateSub(args.rowEnd, args.rowBegin), i64(kAmxMinRows))
          : nullptr;
  if (amx)
    ifThen(useTiles, [&] { configureTiles(); });
  loop(args.rowBegin, args.rowEnd, blockRows_, [&](llvm::Value *blockRow) {
    llvm::Value *rows = min(i64(blockRows_), ir_.CreateSub(args.rowEnd, blockRow));
    // Whole tiles, and a last one over zero rows when at least kAmxMinRows
    // remain (rows <= blockRows_, a multiple of 32: it fits the block).
    llvm::Value *amxRows = i64(0);
    if (amx) {
      llvm::Value *whole = ir_.CreateMul(ir_.CreateSDiv(rows, i64(kAmxRows)), i64(kAmxRows));
      llvm::Value *rounded = ir_.CreateAdd(whole, i64(kAmxRows));
      amxRows = ir_.CreateSelect(ir_.CreateICmpSGE(ir_.CreateSub(rows, whole), i64(kAmxMinRows)),
                                 rounded, whole);
    }
    packBlock(args, blockRow, rows,
              ir_.CreateSelect(ir_.CreateICmpSGT(amxRows, rows), amxRows, rows));
    loop(args.colBegin, args.colEnd, kPanel, [&](llvm::Value *col) {
      llvm::Value *width = ir_.CreateSub(args.colEnd, col);
      std::array<llvm::Value *, 2> masks = {laneMask(width, 0), laneMask(width, 1)};
      llvm::Value *panel =
          at(i16_, args.packedB,
             ir_.CreateMul(ir_.CreateSDiv(col, i64(kPanel)), i64(kPadded_ * kPanel)));
      if (amx) {
        // The next panel is kPadded lines; each of the block's T tiles
        // prefetches ceil(32 / T) of them per k step (of kPadded / 32).
        llvm::Value *tiles =
            ir_.CreateSDiv(ir_.CreateAdd(amxRows, i64(kAmxRows - 1)), i64(kAmxRows));
        tiles = ir_.CreateSelect(ir_.CreateICmpSGT(tiles, i64(0)), tiles, i64(1));
        llvm::Value *perStep = ir_.CreateSDiv(
            ir_.CreateAdd(i64(Bf16GemmDepthStep), ir_.CreateSub(tiles, i64(1))), tiles);
        llvm::Value *nextPanel = at(i16_, panel, i64(kPadded_ * kPanel));
        loop(i64(0), amxRows, kAmxRows, [&](llvm::Value *tileRow) {
          llvm::Value *firstLine =
              ir_.CreateMul(ir_.CreateSDiv(tileRow, i64(kAmxRows)),
                            ir_.CreateMul(perStep, i64(kPadded_ / Bf16GemmDepthStep)));
          llvm::Value *outRow = ir_.CreateAdd(blockRow, tileRow);
          auto throughScratch = [&] {
            amxTile(tileRow, panel, nextPanel, firstLine, perStep, args, outRow, col, false);
            storeScratch(args, outRow, min(i64(kAmxRows), ir_.CreateSub(rows, tileRow)), col,
                         masks);
          };
          if (!directTiles()) {
            throughScratch();
            return;
          }
          llvm::Value *whole =
              ir_.CreateAnd(ir_.CreateICmpSGE(width, i64(kPanel)),
                            ir_.CreateICmpSGE(ir_.CreateSub(rows, tileRow), i64(kAmxRows)));
          ifThenElse(
              whole,
              [&] {
                amxTile(tileRow, panel, nextPanel, firstLine, perStep, args, outRow, col, true);
              },
              throughScratch);
        });
      }
      vectorRows(args, min(amxRows, rows), rows, blockRow, panel, col, masks);
    });
  });
  if (amx)
    ifThen(useTiles, [&] { callX86(llvm::Intrinsic::x86_tilerelease, {}); });
  ir_.CreateRetVoid();
}

} // namespace

llvm::Function *emitBf16Gemm(llvm::Module &module, const Bf16GemmSpec &spec) {
  if (spec.k <= 0 || spec.n <= 0)
    fail("bf16 GEMM '", spec.name, "': K and N must be positive (got ", spec.k, " and ", spec.n,
         ")");
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *pointer = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  auto *type = llvm::FunctionType::get(
      llvm::Type::getVoidTy(context),
      {pointer, i64, pointer, pointer, i64, i64, i64, pointer, pointer, i64, i64, i64}, false);
  auto *function =
      llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, spec.name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  std::vector<llvm::Value *> values;
  for (llvm::Argument &argument : function->args())
    values.push_back(&argument);
  Arguments args{values[0], values[1], values[2], values[3], values[4],  values[5],
                 values[6], values[7], values[8], values[9], values[10], values[11]};
  Bf16GemmIR(*function, spec).emit(args);
  return function;
}

} // namespace onnxc
