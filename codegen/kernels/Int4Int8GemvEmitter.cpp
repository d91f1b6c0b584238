//===- codegen/kernels/Int4Int8GemvEmitter.cpp - LLVM IR for int8 rows times int4 weights -===//
//
// Per 8 rows of k and 8-column panel: one 32-byte load, the low and high
// nibbles split by two ands and a shift, and per row two u8 x s8 dot steps
// into the panel's int32 accumulator. Panels go four side by side for one
// row, two for two (four independent accumulator chains either way), one
// for three or four; side-by-side panels are a stride of the call's range
// apart, so that each reads its own long stream (emit), prefetched ahead
// (StreamPrefetch.h). At each block's end the exact int32 sum is corrected
// for the zero points, converted, and scaled into the f32 totals.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Int4Int8Gemv.h"

#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/StreamPrefetch.h"
#include "ir/Error.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"

#include <sstream>

namespace onnxc {
namespace {

constexpr int64_t kPanel = 8;

int64_t paddedBlock(int64_t block) { return (block + 7) / 8 * 8; }

std::vector<llvm::Value *> countedLoop(llvm::IRBuilder<> &b, llvm::Value *begin, llvm::Value *end,
                                       int64_t step, llvm::ArrayRef<llvm::Value *> initial,
                                       CountedLoopBody body) {
  CountedLoopShape shape;
  shape.disableUnroll = true;
  return emitCountedLoop(b, shape, begin, end, step, initial, body);
}

class Int4Int8Body {
public:
  Int4Int8Body(llvm::Function &function, const Int4Int8GemvSpec &spec)
      : b_(llvm::BasicBlock::Create(function.getContext(), "entry", &function)), spec_(spec),
        floats_(llvm::FixedVectorType::get(b_.getFloatTy(), kPanel)),
        ints_(llvm::FixedVectorType::get(b_.getInt32Ty(), kPanel)),
        bytes_(llvm::FixedVectorType::get(b_.getInt8Ty(), 32)), xq_(function.getArg(0)),
        packed_(function.getArg(1)), y_(function.getArg(2)), ldy_(function.getArg(3)) {
    blocks_ = (spec.k + spec.block - 1) / spec.block;
    record_ = kPanel * 5 + paddedBlock(spec.block) * 4;
    rowBytes_ = int4Int8RowBytes(spec.k, spec.block);
    // Side-by-side panels are also side-by-side memory streams, which one
    // core needs several of to reach its bandwidth.
    groupPanels_ = spec.rows == 1 ? 4 : spec.rows == 2 ? 2 : 1;
  }

  /// The panels side by side are a stride of the range apart, not
  /// neighbours: each then walks its own part of the range panel after
  /// panel, one stream through memory (a panel's records are contiguous and
  /// the next panel's follow). Four neighbours side by side were four streams
  /// of one panel each (10.5 KiB at K = 2048), which ended before the
  /// hardware prefetcher was up to speed: 2048 x 2048 read at 0.77 of a
  /// plain read where 5632 x 2048's longer panels reached 0.96.
  void emit(llvm::Value *panelBegin, llvm::Value *panelEnd) {
    llvm::Value *groups = b_.CreateSDiv(b_.CreateSub(panelEnd, panelBegin), i64(groupPanels_));
    llvm::Value *groupedEnd = b_.CreateAdd(panelBegin, b_.CreateMul(groups, i64(groupPanels_)));
    countedLoop(b_, panelBegin, b_.CreateAdd(panelBegin, groups), 1, {},
                [&](llvm::Value *first, llvm::ArrayRef<llvm::Value *>) {
                  std::vector<llvm::Value *> panels;
                  for (int64_t p = 0; p < groupPanels_; ++p)
                    panels.push_back(b_.CreateAdd(first, b_.CreateMul(groups, i64(p))));
                  emitGroup(panels);
                  return std::vector<llvm::Value *>{};
                });
    if (groupPanels_ > 1)
      countedLoop(b_, groupedEnd, panelEnd, 1, {},
                  [&](llvm::Value *panel, llvm::ArrayRef<llvm::Value *>) {
                    emitGroup({panel});
                    return std::vector<llvm::Value *>{};
                  });
    b_.CreateRetVoid();
  }

private:
  llvm::Value *i64(int64_t value) { return b_.getInt64(value); }
  llvm::Value *byteAt(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), base, offset);
  }
  llvm::Value *load(llvm::Type *type, llvm::Value *address) {
    return b_.CreateAlignedLoad(type, address, llvm::Align(1));
  }
  llvm::Module &module() { return *b_.GetInsertBlock()->getModule(); }

  /// sum + per i32 lane the dot product of its 4 u8 weights with 4 s8 codes.
  llvm::Value *dot4(llvm::Value *sum, llvm::Value *weights, llvm::Value *codes) {
    switch (spec_.isa) {
    case IntegerGemmIsa::AvxVnni:
    case IntegerGemmIsa::Avx512Vnni:
    case IntegerGemmIsa::Amx: {
      llvm::Function *vnni =
          llvm::Intrinsic::getDeclaration(&module(), llvm::Intrinsic::x86_avx512_vpdpbusd_256);
      llvm::FunctionType *type = vnni->getFunctionType();
      return b_.CreateCall(vnni, {sum, b_.CreateBitCast(weights, type->getParamType(1)),
                                  b_.CreateBitCast(codes, type->getParamType(2))});
    }
    case IntegerGemmIsa::Avx2: {
      auto *halves = llvm::FixedVectorType::get(b_.getInt16Ty(), 16);
      llvm::Value *pairs = b_.CreateCall(
          llvm::Intrinsic::getDeclaration(&module(), llvm::Intrinsic::x86_avx2_pmadd_ub_sw),
          {weights, b_.CreateBitCast(codes, bytes_)});
      llvm::Value *quads = b_.CreateCall(
          llvm::Intrinsic::getDeclaration(&module(), llvm::Intrinsic::x86_avx2_pmadd_wd),
          {pairs, llvm::ConstantInt::get(halves, 1)});
      return b_.CreateAdd(sum, quads);
    }
    case IntegerGemmIsa::Generic:
      break;
    }
    auto *wide = llvm::FixedVectorType::get(b_.getInt32Ty(), 32);
    llvm::Value *products = b_.CreateMul(b_.CreateZExt(weights, wide),
                                         b_.CreateSExt(b_.CreateBitCast(codes, bytes_), wide));
    for (int q = 0; q < 4; ++q) {
      std::vector<int> lanes;
      for (int j = 0; j < kPanel; ++j)
        lanes.push_back(j * 4 + q);
      sum = b_.CreateAdd(sum, b_.CreateShuffleVector(products, lanes));
    }
    return sum;
  }

  /// vpdpbusd's accumulator is an operand: the low and high nibbles take
  /// sets of their own. Where they meet in 16 bits before one vpmaddwd, one
  /// set per (panel, row) is enough once there are 4 of those chains; fewer
  /// take 2 sets (even and odd groups).
  bool splitsNibbles() const {
    return spec_.isa != IntegerGemmIsa::Avx2 && spec_.isa != IntegerGemmIsa::Generic;
  }
  int64_t accumulatorSets(int64_t count) const {
    const int64_t parities = count * spec_.rows >= 4 ? 1 : 2;
    return parities * (splitsNibbles() ? 2 : 1);
  }

  /// sum + the dot products of both nibble halves: with vpmaddubsw the two
  /// pair sums (each at most 2 · 15 · 128) add in 16 bits exactly, so one
  /// vpmaddwd serves both.
  llvm::Value *dot8(llvm::Value *sum, llvm::Value *lo, llvm::Value *loCodes, llvm::Value *hi,
                    llvm::Value *hiCodes) {
    if (spec_.isa != IntegerGemmIsa::Avx2)
      return dot4(dot4(sum, lo, loCodes), hi, hiCodes);
    auto *halves = llvm::FixedVectorType::get(b_.getInt16Ty(), 16);
    llvm::Function *maddubs =
        llvm::Intrinsic::getDeclaration(&module(), llvm::Intrinsic::x86_avx2_pmadd_ub_sw);
    llvm::Value *pairs =
        b_.CreateAdd(b_.CreateCall(maddubs, {lo, b_.CreateBitCast(loCodes, bytes_)}),
                     b_.CreateCall(maddubs, {hi, b_.CreateBitCast(hiCodes, bytes_)}));
    llvm::Value *quads = b_.CreateCall(
        llvm::Intrinsic::getDeclaration(&module(), llvm::Intrinsic::x86_avx2_pmadd_wd),
        {pairs, llvm::ConstantInt::get(halves, 1)});
    return b_.CreateAdd(sum, quads);
  }

  void emitGroup(const std::vector<llvm::Value *> &panels) {
    const int64_t count = int64_t(panels.size());
    std::vector<llvm::Value *> panelRecords;
    for (llvm::Value *panel : panels)
      panelRecords.push_back(byteAt(packed_, b_.CreateMul(panel, i64(blocks_ * record_))));
    std::vector<llvm::Value *> totals(size_t(count * spec_.rows),
                                      llvm::Constant::getNullValue(floats_));
    totals = countedLoop(b_, i64(0), i64(blocks_), 1, totals,
                         [&](llvm::Value *block, llvm::ArrayRef<llvm::Value *> carried) {
                           return emitBlock(panelRecords, block, count, carried);
                         });
    for (int64_t p = 0; p < count; ++p)
      store(panels[size_t(p)], totals, p);
  }

  std::vector<llvm::Value *> emitBlock(const std::vector<llvm::Value *> &panelRecords,
                                       llvm::Value *block, int64_t count,
                                       llvm::ArrayRef<llvm::Value *> totals) {
    const int64_t rows = spec_.rows, padded = paddedBlock(spec_.block);
    std::vector<llvm::Value *> records;
    for (int64_t p = 0; p < count; ++p) {
      records.push_back(byteAt(panelRecords[size_t(p)], b_.CreateMul(block, i64(record_))));
      prefetchAheadOfStream(b_, records.back(), record_);
    }
    llvm::Value *codesBase = b_.CreateAdd(i64(blocks_ * 8), b_.CreateMul(block, i64(padded)));
    llvm::Constant *lowNibbles = llvm::ConstantInt::get(bytes_, 15);
    // acc[(set * count + p) * rows + r]: sets of accumulators that groups
    // take in turn (and, with vpdpbusd, that the low and high nibbles
    // split), so no chain of adds waits on the one before.
    const int64_t sets = accumulatorSets(count), perSet = count * rows, groups = padded / 8;
    const int64_t parities = splitsNibbles() ? sets / 2 : sets;
    std::vector<llvm::Value *> acc(size_t(sets * perSet), llvm::Constant::getNullValue(ints_));
    auto stepGroup = [&](llvm::Value *group, int64_t parity, std::vector<llvm::Value *> &next) {
      llvm::Value *offset = b_.CreateAdd(codesBase, b_.CreateMul(group, i64(8)));
      std::vector<llvm::Value *> low, high;
      for (int64_t r = 0; r < rows; ++r) {
        llvm::Value *row = byteAt(xq_, b_.CreateAdd(offset, i64(r * rowBytes_)));
        low.push_back(b_.CreateVectorSplat(kPanel, load(b_.getInt32Ty(), row)));
        high.push_back(b_.CreateVectorSplat(kPanel, load(b_.getInt32Ty(), byteAt(row, i64(4)))));
      }
      for (int64_t p = 0; p < count; ++p) {
        llvm::Value *v =
            load(bytes_, byteAt(records[size_t(p)],
                                b_.CreateAdd(i64(kPanel * 5), b_.CreateMul(group, i64(32)))));
        llvm::Value *lo = b_.CreateAnd(v, lowNibbles);
        auto *halves = llvm::FixedVectorType::get(b_.getInt16Ty(), 16);
        llvm::Value *hi = b_.CreateAnd(
            b_.CreateBitCast(b_.CreateLShr(b_.CreateBitCast(v, halves), 4), bytes_), lowNibbles);
        for (int64_t r = 0; r < rows; ++r) {
          auto slot = [&](int64_t set) -> llvm::Value *& {
            return next[size_t((set * count + p) * rows + r)];
          };
          const int64_t set = parity % parities;
          if (splitsNibbles()) { // vpdpbusd: low and high nibbles into their own sets
            slot(2 * set) = dot4(slot(2 * set), lo, low[size_t(r)]);
            slot(2 * set + 1) = dot4(slot(2 * set + 1), hi, high[size_t(r)]);
          } else {
            slot(set) = dot8(slot(set), lo, low[size_t(r)], hi, high[size_t(r)]);
          }
        }
      }
    };
    acc = countedLoop(b_, i64(0), i64(groups / 2 * 2), 2, acc,
                      [&](llvm::Value *group, llvm::ArrayRef<llvm::Value *> carried) {
                        std::vector<llvm::Value *> next(carried.begin(), carried.end());
                        stepGroup(group, 0, next);
                        stepGroup(b_.CreateAdd(group, i64(1)), 1, next);
                        return next;
                      });
    if (groups % 2)
      stepGroup(i64(groups - 1), 0, acc);
    for (int64_t set = 1; set < sets; ++set)
      for (int64_t i = 0; i < perSet; ++i)
        acc[size_t(i)] = b_.CreateAdd(acc[size_t(i)], acc[size_t(set * perSet + i)]);
    std::vector<llvm::Value *> next(totals.begin(), totals.end());
    for (int64_t p = 0; p < count; ++p) {
      llvm::Value *scale = load(floats_, records[size_t(p)]);
      llvm::Type *zeroType = llvm::FixedVectorType::get(b_.getInt8Ty(), kPanel);
      llvm::Value *zero =
          b_.CreateUIToFP(load(zeroType, byteAt(records[size_t(p)], i64(kPanel * 4))), floats_);
      for (int64_t r = 0; r < rows; ++r) {
        llvm::Value *header =
            byteAt(xq_, b_.CreateAdd(b_.CreateMul(block, i64(8)), i64(r * rowBytes_)));
        llvm::Value *rowScale = load(b_.getFloatTy(), header);
        llvm::Value *codeSum = load(b_.getFloatTy(), byteAt(header, i64(4)));
        // dot − zp · Σ codes: both exact integers below 2^24.
        llvm::Value *exact =
            b_.CreateIntrinsic(llvm::Intrinsic::fma, {floats_},
                               {b_.CreateFNeg(zero), b_.CreateVectorSplat(kPanel, codeSum),
                                b_.CreateSIToFP(acc[size_t(p * rows + r)], floats_)});
        llvm::Value *both = b_.CreateFMul(scale, b_.CreateVectorSplat(kPanel, rowScale));
        llvm::Value *&total = next[size_t(p * rows + r)];
        total = b_.CreateIntrinsic(llvm::Intrinsic::fma, {floats_}, {both, exact, total});
      }
    }
    return next;
  }

  void store(llvm::Value *panel, const std::vector<llvm::Value *> &totals, int64_t p) {
    llvm::Value *column = b_.CreateMul(panel, i64(kPanel));
    llvm::Value *valid = b_.CreateTrunc(b_.CreateSub(i64(spec_.n), column), b_.getInt32Ty());
    std::vector<llvm::Constant *> laneIndex;
    for (int lane = 0; lane < kPanel; ++lane)
      laneIndex.push_back(b_.getInt32(lane));
    llvm::Value *mask =
        b_.CreateICmpSLT(llvm::ConstantVector::get(laneIndex), b_.CreateVectorSplat(kPanel, valid));
    for (int64_t r = 0; r < spec_.rows; ++r) {
      llvm::Value *address = b_.CreateInBoundsGEP(b_.getFloatTy(), y_,
                                                  b_.CreateAdd(column, b_.CreateMul(i64(r), ldy_)));
      b_.CreateMaskedStore(totals[size_t(p * spec_.rows + r)], address, llvm::Align(4), mask);
    }
  }

  llvm::IRBuilder<> b_;
  const Int4Int8GemvSpec &spec_;
  llvm::FixedVectorType *floats_, *ints_, *bytes_;
  llvm::Value *xq_, *packed_, *y_, *ldy_;
  int64_t blocks_ = 0, record_ = 0, rowBytes_ = 0, groupPanels_ = 1;
};

llvm::Function *declare(llvm::Module &module, const std::string &name,
                        llvm::ArrayRef<llvm::Type *> parameters,
                        llvm::ArrayRef<const char *> names) {
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(module.getContext()), parameters,
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  for (unsigned i = 0; i < names.size(); ++i)
    function->getArg(i)->setName(names[i]);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoFree);
  return function;
}

} // namespace

std::string int4Int8GemvKernelName(const Int4Int8GemvSpec &spec) {
  std::ostringstream name;
  name << "int4_int8_gemv_k" << spec.k << "_n" << spec.n << "_b" << spec.block << "_r" << spec.rows
       << "_" << integerGemmIsaName(spec.isa);
  return name.str();
}

llvm::Function *emitInt4Int8Gemv(llvm::Module &module, const Int4Int8GemvSpec &spec) {
  if (spec.k <= 0 || spec.n <= 0 || spec.block < 2)
    fail("int4 x int8 gemv kernel '", spec.name, "': K=", spec.k, " N=", spec.n, " block ",
         spec.block, " must be positive (block at least 2)");
  if (spec.rows < 1 || spec.rows > kMaxInt4Int8GemvRows)
    fail("int4 x int8 gemv kernel '", spec.name, "': ", spec.rows, " rows (1 to ",
         kMaxInt4Int8GemvRows, ")");
  if (llvm::Function *existing = module.getFunction(spec.name))
    return existing;
  llvm::Type *ptr = llvm::PointerType::getUnqual(module.getContext());
  llvm::Type *i64 = llvm::Type::getInt64Ty(module.getContext());
  llvm::Function *function = declare(module, spec.name, {ptr, ptr, ptr, i64, i64, i64},
                                     {"xq", "packed", "y", "ldy", "panelBegin", "panelEnd"});
  Int4Int8Body(*function, spec).emit(function->getArg(4), function->getArg(5));
  return function;
}

} // namespace onnxc
