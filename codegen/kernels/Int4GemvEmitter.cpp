//===- codegen/kernels/Int4GemvEmitter.cpp - LLVM IR for rows times int4 weights ---===//
//
// Panels are walked in groups of side-by-side panels, each with its own
// stream of records, prefetched ahead (StreamPrefetch.h). Per k: one
// broadcast of x[r][k] per row, one row of nibbles per panel turned into L
// f32 weights (a load, a shift on odd rows, then an and-or and a
// subtraction, or a table permute when the zero point is shared; either is
// shared by the rows), one FMA per row and panel. An FMA's latency is 4
// cycles and the dequantization about 1.25 cycles per panel, so a group
// keeps at least 4 independent accumulator chains: 4 panels for one row, 2
// for two, 1 panel for 3 or 4 rows, and sets of k taken in turn where
// that is fewer (the single panels after the last whole group).
//
// Four streams for one row, against two neighbouring panels before, took a
// TinyLlama-shaped decode step (onnxc generate --bench, level 0, context
// 128, one thread, alternating runs on a Xeon, Emerald Rapids) from 68-76
// to 58-65 ms; the octet layout's cheaper rows (Int4Gemv.h) raised the
// kernel's rate with its weights in L2 from 20.6-21.5 to 22.6-26 GB/s.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Int4Gemv.h"

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

/// k steps per iteration of a block's loop: one octet of rows (Int4Gemv.h).
constexpr int64_t kUnroll = 8;
static_assert(kUnroll == 8, "the unrolled loop's step is an octet's first row");
/// Independent accumulator chains a group keeps at least (an FMA's latency
/// is 4 cycles): panels times rows, times sets of k taken in turn.
constexpr int64_t kChains = 4;
/// The bits of 2^23 as a float: an integer below 2^23 OR-ed into them is
/// the float 2^23 + that integer.
constexpr uint32_t kFloatBias = 0x4B000000;

class Int4GemvBody {
public:
  Int4GemvBody(llvm::Function &function, const Int4GemvSpec &spec)
      : b_(llvm::BasicBlock::Create(function.getContext(), "entry", &function)), spec_(spec),
        lanes_(unsigned(spec.lanes)), floats_(llvm::FixedVectorType::get(b_.getFloatTy(), lanes_)),
        ints_(llvm::FixedVectorType::get(b_.getInt32Ty(), lanes_)), x_(function.getArg(0)),
        ldx_(function.getArg(1)), packed_(function.getArg(2)), y_(function.getArg(3)),
        ldy_(function.getArg(4)) {
    blocks_ = (spec.k + spec.block - 1) / spec.block;
    record_ = int4GemvRecordBytes(spec.block, spec.lanes);
    // Side-by-side panels are also side-by-side memory streams, which one
    // core needs several of to reach its bandwidth (emit).
    groupPanels_ = spec.rows == 1 ? 4 : spec.rows == 2 ? 2 : 1;
    if (lanes_ == 16 && spec.uniformZero >= 0) {
      std::vector<llvm::Constant *> weights;
      for (int code = 0; code < 16; ++code)
        weights.push_back(llvm::ConstantFP::get(b_.getFloatTy(), float(code - spec.uniformZero)));
      table_ = llvm::ConstantVector::get(weights);
    }
  }

  /// Whole groups, then single panels. The panels of a group are a stride
  /// of the range apart, not neighbours: each walks its own part of the
  /// range panel after panel, one long stream through memory (a panel's
  /// records are contiguous and the next panel's follow), as in
  /// Int4Int8GemvEmitter.cpp. Neighbours made streams of one panel each,
  /// which ended before the hardware prefetchers were up to speed.
  void emit(llvm::Value *panelBegin, llvm::Value *panelEnd) {
    llvm::Value *groups = b_.CreateSDiv(b_.CreateSub(panelEnd, panelBegin), i64(groupPanels_));
    llvm::Value *groupedEnd = b_.CreateAdd(panelBegin, b_.CreateMul(groups, i64(groupPanels_)));
    loop(panelBegin, b_.CreateAdd(panelBegin, groups), 1, [&](llvm::Value *first) {
      std::vector<llvm::Value *> panels;
      for (int64_t p = 0; p < groupPanels_; ++p)
        panels.push_back(b_.CreateAdd(first, b_.CreateMul(groups, i64(p))));
      emitGroup(panels);
    });
    if (groupPanels_ > 1)
      loop(groupedEnd, panelEnd, 1, [&](llvm::Value *panel) { emitGroup({panel}); });
    b_.CreateRetVoid();
  }

private:
  llvm::Value *i64(int64_t value) { return b_.getInt64(value); }
  llvm::Value *byteAt(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), base, offset);
  }
  llvm::Value *floatAt(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateInBoundsGEP(b_.getFloatTy(), base, offset);
  }

  void loop(llvm::Value *begin, llvm::Value *end, int64_t step,
            llvm::function_ref<void(llvm::Value *)> body) {
    emitPlainLoop(b_, begin, end, step, body);
  }

  /// 2^23 + `codes` (< 2^23) as floats: the codes put in the mantissa of
  /// 2^23, one OR (with the nibble mask, one vpternlogd on AVX-512).
  llvm::Value *biasedFloats(llvm::Value *codes) {
    return b_.CreateBitCast(b_.CreateOr(codes, llvm::ConstantInt::get(ints_, kFloatBias)), floats_);
  }

  /// The L weights of row `octet` + `row` of a record's nibbles, minus the
  /// zero points (`zero`: biasedFloats of them). (2^23 + q) - (2^23 + zp)
  /// is q - zp exactly, what converting the integer difference gives, in
  /// one subtraction instead of a subtraction and a conversion.
  /// With a shared zero point (table_), the table's entries at the codes.
  llvm::Value *weightsAt(llvm::Value *nibbles, llvm::Value *octet, int64_t row, llvm::Value *zero) {
    if (table_)
      return b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_permvar_sf_512, {},
                                {table_, emitInt4RowShifted(b_, nibbles, octet, i64(row), lanes_)});
    return b_.CreateFSub(biasedFloats(emitInt4RowCodes(b_, nibbles, octet, i64(row), lanes_)),
                         zero);
  }

  /// The columns of `panels` in every row.
  void emitGroup(const std::vector<llvm::Value *> &panels) {
    const int64_t rows = spec_.rows, count = int64_t(panels.size()), perSet = count * rows;
    std::vector<llvm::Value *> panelRecords;
    for (llvm::Value *panel : panels)
      panelRecords.push_back(byteAt(packed_, b_.CreateMul(panel, i64(blocks_ * record_))));
    // total[p * rows + r]
    std::vector<llvm::Value *> zeroTotals(size_t(perSet), llvm::Constant::getNullValue(floats_));
    const int64_t fullBlocks = spec_.k / spec_.block, tail = spec_.k % spec_.block;
    CountedLoopShape shape;
    shape.disableUnroll = true;
    std::vector<llvm::Value *> totals =
        emitCountedLoop(b_, shape, i64(0), i64(fullBlocks), 1, zeroTotals,
                        [&](llvm::Value *block, llvm::ArrayRef<llvm::Value *> carried) {
                          return emitBlock(panelRecords, block, spec_.block, count, carried);
                        });
    if (tail > 0)
      totals = emitBlock(panelRecords, i64(fullBlocks), tail, count, totals);
    for (int64_t p = 0; p < count; ++p)
      store(panels[size_t(p)], totals, p);
  }

  /// One block of `depth` rows: returns the totals plus scale * block sum.
  std::vector<llvm::Value *> emitBlock(const std::vector<llvm::Value *> &panelRecords,
                                       llvm::Value *block, int64_t depth, int64_t count,
                                       llvm::ArrayRef<llvm::Value *> totals) {
    const int64_t rows = spec_.rows, perSet = count * rows;
    std::vector<llvm::Value *> records, zeros, nibbles;
    for (int64_t p = 0; p < count; ++p) {
      llvm::Value *record = byteAt(panelRecords[size_t(p)], b_.CreateMul(block, i64(record_)));
      records.push_back(record);
      if (table_) {
        zeros.push_back(nullptr); // in the table
      } else {
        llvm::Type *zeroType = llvm::FixedVectorType::get(b_.getInt8Ty(), lanes_);
        llvm::Value *zeroBytes =
            b_.CreateAlignedLoad(zeroType, byteAt(record, i64(spec_.lanes * 4)), llvm::Align(1));
        zeros.push_back(biasedFloats(b_.CreateZExt(zeroBytes, ints_)));
      }
      nibbles.push_back(byteAt(record, i64(spec_.lanes * 5)));
      prefetchAheadOfStream(b_, record, record_);
    }
    llvm::Value *kBase = b_.CreateMul(block, i64(spec_.block));
    // acc[set * perSet + p * rows + r]
    // Row octet + row of the block.
    auto stepK = [&](llvm::Value *octet, int64_t row, int64_t set,
                     std::vector<llvm::Value *> &acc) {
      llvm::Value *k = b_.CreateAdd(kBase, b_.CreateAdd(octet, i64(row)));
      std::vector<llvm::Value *> xk;
      for (int64_t r = 0; r < rows; ++r)
        xk.push_back(b_.CreateVectorSplat(
            lanes_, b_.CreateLoad(b_.getFloatTy(),
                                  floatAt(x_, b_.CreateAdd(k, b_.CreateMul(i64(r), ldx_))))));
      for (int64_t p = 0; p < count; ++p) {
        llvm::Value *w = weightsAt(nibbles[size_t(p)], octet, row, zeros[size_t(p)]);
        for (int64_t r = 0; r < rows; ++r) {
          llvm::Value *&sum = acc[size_t(set * perSet + p * rows + r)];
          sum = b_.CreateIntrinsic(llvm::Intrinsic::fma, {floats_}, {xk[size_t(r)], w, sum});
        }
      }
    };
    const int64_t splits = (kChains + perSet - 1) / perSet;
    std::vector<llvm::Value *> acc(size_t(splits * perSet), llvm::Constant::getNullValue(floats_));
    const int64_t unrolledEnd = depth / kUnroll * kUnroll;
    if (unrolledEnd > 0) {
      CountedLoopShape shape;
      shape.disableUnroll = true;
      acc = emitCountedLoop(b_, shape, i64(0), i64(unrolledEnd), kUnroll, acc,
                            [&](llvm::Value *kk, llvm::ArrayRef<llvm::Value *> carried) {
                              std::vector<llvm::Value *> next(carried.begin(), carried.end());
                              for (int64_t u = 0; u < kUnroll; ++u)
                                stepK(kk, u, u % splits, next);
                              return next;
                            });
    }
    for (int64_t kk = unrolledEnd; kk < depth; ++kk)
      stepK(i64(kk / 8 * 8), kk % 8, kk % splits, acc);
    std::vector<llvm::Value *> next(totals.begin(), totals.end());
    for (int64_t p = 0; p < count; ++p) {
      llvm::Value *scale = b_.CreateAlignedLoad(floats_, records[size_t(p)], llvm::Align(1));
      for (int64_t r = 0; r < rows; ++r) {
        size_t index = size_t(p * rows + r);
        llvm::Value *sum = acc[index];
        for (int64_t set = 1; set < splits; ++set)
          sum = b_.CreateFAdd(sum, acc[size_t(set * perSet) + index]);
        next[index] =
            b_.CreateIntrinsic(llvm::Intrinsic::fma, {floats_}, {scale, sum, next[index]});
      }
    }
    return next;
  }

  /// Stores panel `panel` of every row, only the columns below N.
  void store(llvm::Value *panel, const std::vector<llvm::Value *> &totals, int64_t p) {
    llvm::Value *column = b_.CreateMul(panel, i64(spec_.lanes));
    llvm::Value *valid = b_.CreateTrunc(b_.CreateSub(i64(spec_.n), column), b_.getInt32Ty());
    std::vector<llvm::Constant *> laneIndex;
    for (unsigned lane = 0; lane < lanes_; ++lane)
      laneIndex.push_back(b_.getInt32(lane));
    llvm::Value *mask =
        b_.CreateICmpSLT(llvm::ConstantVector::get(laneIndex), b_.CreateVectorSplat(lanes_, valid));
    for (int64_t r = 0; r < spec_.rows; ++r) {
      llvm::Value *address = floatAt(y_, b_.CreateAdd(column, b_.CreateMul(i64(r), ldy_)));
      b_.CreateMaskedStore(totals[size_t(p * spec_.rows + r)], address, llvm::Align(4), mask);
    }
  }

  llvm::IRBuilder<> b_;
  const Int4GemvSpec &spec_;
  unsigned lanes_;
  llvm::FixedVectorType *floats_, *ints_;
  llvm::Value *x_, *ldx_, *packed_, *y_, *ldy_;
  int64_t blocks_ = 0, record_ = 0, groupPanels_ = 1;
  /// q - zp for the 16 codes when the zero point is shared (16 lanes).
  llvm::Constant *table_ = nullptr;
};

} // namespace

llvm::Value *emitInt4RowShifted(llvm::IRBuilderBase &builder, llvm::Value *nibbles,
                                llvm::Value *octet, llvm::Value *row, unsigned lanes) {
  auto *ints = llvm::FixedVectorType::get(builder.getInt32Ty(), lanes);
  if (lanes == 8) {
    // The row's 32-bit word in every lane (one broadcast load), lane j
    // shifted by 4j to its column's nibble.
    llvm::Value *offset = builder.CreateMul(builder.CreateAdd(octet, row), builder.getInt64(4));
    llvm::Value *word = builder.CreateAlignedLoad(
        builder.getInt32Ty(), builder.CreateInBoundsGEP(builder.getInt8Ty(), nibbles, offset),
        llvm::Align(1));
    std::vector<llvm::Constant *> shifts;
    for (unsigned lane = 0; lane < lanes; ++lane)
      shifts.push_back(builder.getInt32(4 * lane));
    return builder.CreateLShr(builder.CreateVectorSplat(lanes, word),
                              llvm::ConstantVector::get(shifts));
  }
  // 16 lanes: the octet's 64 bytes loaded from byte row / 2 on, which puts
  // byte row / 2 of each column's word in its lane's low byte; an odd row
  // is that byte's high nibble.
  llvm::Value *offset =
      builder.CreateAdd(builder.CreateMul(octet, builder.getInt64(8)), builder.CreateLShr(row, 1));
  llvm::Value *words = builder.CreateAlignedLoad(
      ints, builder.CreateInBoundsGEP(builder.getInt8Ty(), nibbles, offset), llvm::Align(1));
  auto *constantRow = llvm::dyn_cast<llvm::ConstantInt>(row);
  if (constantRow && constantRow->getZExtValue() % 2 == 0)
    return words;
  llvm::Value *shift = builder.CreateTrunc(
      builder.CreateMul(builder.CreateAnd(row, 1), builder.getInt64(4)), builder.getInt32Ty());
  return builder.CreateLShr(words, builder.CreateVectorSplat(lanes, shift));
}

llvm::Value *emitInt4RowCodes(llvm::IRBuilderBase &builder, llvm::Value *nibbles,
                              llvm::Value *octet, llvm::Value *row, unsigned lanes) {
  auto *ints = llvm::FixedVectorType::get(builder.getInt32Ty(), lanes);
  return builder.CreateAnd(emitInt4RowShifted(builder, nibbles, octet, row, lanes),
                           llvm::ConstantInt::get(ints, 15));
}

std::string int4GemvKernelName(const Int4GemvSpec &spec) {
  std::ostringstream name;
  name << "int4_gemv_k" << spec.k << "_n" << spec.n << "_b" << spec.block << "_l" << spec.lanes
       << "_r" << spec.rows;
  if (spec.lanes == 16 && spec.uniformZero >= 0)
    name << "_z" << spec.uniformZero;
  return name.str();
}

llvm::Function *emitInt4Gemv(llvm::Module &module, const Int4GemvSpec &spec) {
  if (spec.k <= 0 || spec.n <= 0 || spec.block < 2)
    fail("int4 gemv kernel '", spec.name, "': K=", spec.k, " N=", spec.n, " block ", spec.block,
         " must be positive (block at least 2)");
  if (spec.lanes != 8 && spec.lanes != 16)
    fail("int4 gemv kernel '", spec.name, "': ", spec.lanes, " lanes is not a kernel width");
  if (spec.uniformZero < -1 || spec.uniformZero > 15)
    fail("int4 gemv kernel '", spec.name, "': shared zero point ", spec.uniformZero,
         " is not a code (0 to 15, or -1 for none)");
  if (spec.rows < 1 || spec.rows > kMaxInt4GemvRows)
    fail("int4 gemv kernel '", spec.name, "': ", spec.rows, " rows (1 to ", kMaxInt4GemvRows, ")");
  if (llvm::Function *existing = module.getFunction(spec.name))
    return existing;
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context),
                                       {ptr, i64, ptr, ptr, i64, i64, i64}, /*isVarArg=*/false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, spec.name, module);
  const char *names[] = {"x", "ldx", "packed", "y", "ldy", "panelBegin", "panelEnd"};
  for (unsigned i = 0; i < 7; ++i)
    function->getArg(i)->setName(names[i]);
  for (unsigned i : {0u, 2u, 3u}) {
    function->addParamAttr(i, llvm::Attribute::NoCapture);
    function->addParamAttr(i, llvm::Attribute::NoAlias);
  }
  function->addParamAttr(0, llvm::Attribute::ReadOnly);
  function->addParamAttr(2, llvm::Attribute::ReadOnly);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoFree);
  if (spec.lanes == 16)
    function->addFnAttr("min-legal-vector-width", "512");
  Int4GemvBody(*function, spec).emit(function->getArg(5), function->getArg(6));
  return function;
}

} // namespace onnxc
