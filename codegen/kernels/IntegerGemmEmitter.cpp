//===- codegen/kernels/IntegerGemmEmitter.cpp - LLVM IR for the u8 x s8 GEMM -===//
//
// The loop nest (IntegerGemm.h has the layout and the math):
//
//   for each panel of nr columns                    <- B panel: kPadded*nr bytes
//     the panel's column terms (scale, zero point, adjustment, bias)
//     for each tile of MR rows in [rowBegin, rowEnd) <- A rows stream from L2
//       MR x 2 accumulators over kPadded / 4 groups (unrolled by 4)
//       store: corrections, then by IntegerGemmStore: scale + bias to f32,
//              + bias in s32, or requantize to bytes (masked in the tail panel)
//
// Row tails run the full tile with their missing rows reading the last
// valid row again (valid memory, never stored); a lone row runs a one-row
// kernel. K and N are constants, so
// the tail panel's masks are constants too.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/IntegerGemm.h"

#include "codegen/kernels/AmxTiles.h"
#include "codegen/kernels/GemmIRBuilder.h"
#include "ir/Error.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"

#include <array>

namespace onnxc {
namespace {

constexpr int64_t MaxRows = 6;

class TileEmitter {
public:
  TileEmitter(GemmIRBuilder &loops, llvm::Function &function, const IntegerGemmSpec &spec)
      : loops_(loops), ir_(loops.ir()), function_(function), spec_(spec),
        lanes_(integerGemmLanes(spec.isa)), nr_(2 * lanes_), mr_(integerGemmRows(spec.isa)),
        kPadded_(integerGemmPaddedDepth(spec.k, spec.isa)),
        nPadded_(integerGemmPaddedColumns(spec.n, nr_)) {
    i32_ = ir_.getInt32Ty();
    intVector_ = llvm::FixedVectorType::get(i32_, unsigned(lanes_));
    floatVector_ = llvm::FixedVectorType::get(ir_.getFloatTy(), unsigned(lanes_));
  }

  void emit() {
    llvm::Value *useTiles = nullptr;
    if (spec_.isa == IntegerGemmIsa::Amx) {
      auto buffer = [&](llvm::Type *type, int64_t count, const char *name) {
        auto *alloca = ir_.CreateAlloca(llvm::ArrayType::get(type, uint64_t(count)), nullptr, name);
        alloca->setAlignment(llvm::Align(64));
        return alloca;
      };
      tileConfig_ = buffer(ir_.getInt8Ty(), 64, "tileConfig");
      tileScratch_ = buffer(i32_, kAmxRows * nr_, "tileScratch");
      useTiles = ir_.CreateICmpSGE(ir_.CreateSub(arg(6), arg(5)), index(kAmxRows));
      loops_.emitIf(useTiles, [&] { configureTiles(); });
    }
    const int64_t fullPanels = spec_.n / nr_;
    loops_.emitLoop(index(0), index(fullPanels), 1,
                    [&](llvm::Value *panel) { emitPanel(ir_.CreateMul(panel, index(nr_)), nr_); });
    if (fullPanels * nr_ != spec_.n)
      emitPanel(index(fullPanels * nr_), spec_.n - fullPanels * nr_);
    if (useTiles)
      loops_.emitIf(useTiles, [&] { callX86(llvm::Intrinsic::x86_tilerelease, {}); });
  }

private:
  using Accumulators = std::array<llvm::Value *, MaxRows * 2>;

  static constexpr int64_t kAmxRows = 32;

  llvm::Value *arg(unsigned i) { return function_.getArg(i); }
  void callX86(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value *> operands) {
    ir_.CreateCall(llvm::Intrinsic::getDeclaration(function_.getParent(), id), operands);
  }
  llvm::Value *tile(int number) { return ir_.getInt8(uint8_t(number)); }

  /// AmxTiles.h's layout: tiles 0-3 hold C (s32), 4-5 A, 6-7 B.
  void configureTiles() { emitAmxTileConfig(ir_, tileConfig_); }

  llvm::Value *index(int64_t value) { return ir_.getInt64(value); }
  llvm::Value *byteAt(llvm::Value *base, llvm::Value *offset) {
    return ir_.CreateInBoundsGEP(ir_.getInt8Ty(), base, offset);
  }
  llvm::Value *wordAt(llvm::Value *base, llvm::Value *offset) {
    return ir_.CreateInBoundsGEP(i32_, base, offset);
  }
  llvm::Value *min(llvm::Value *a, llvm::Value *b) {
    return ir_.CreateSelect(ir_.CreateICmpSLT(a, b), a, b);
  }

  /// Lanes [half * lanes, ...) of the panel that are < width; null when all are.
  llvm::Value *mask(int64_t width, int half) {
    if (width >= nr_)
      return nullptr;
    std::vector<llvm::Constant *> bits;
    for (int64_t lane = 0; lane < lanes_; ++lane)
      bits.push_back(ir_.getInt1(half * lanes_ + lane < width));
    return llvm::ConstantVector::get(bits);
  }

  /// One group of 4 k into every accumulator.
  void stepGroup(llvm::Value *group, const std::array<llvm::Value *, MaxRows> &rows,
                 int64_t rowCount, llvm::Value *bPanel, Accumulators &acc) {
    llvm::Value *bGroup = byteAt(bPanel, ir_.CreateMul(group, index(nr_ * 4)));
    std::array<llvm::Value *, 2> b;
    for (int half = 0; half < 2; ++half)
      b[size_t(half)] = ir_.CreateAlignedLoad(intVector_, byteAt(bGroup, index(half * lanes_ * 4)),
                                              llvm::Align(4));
    for (int64_t r = 0; r < rowCount; ++r) {
      llvm::Value *four = ir_.CreateAlignedLoad(
          i32_, byteAt(rows[size_t(r)], ir_.CreateMul(group, index(4))), llvm::Align(1));
      llvm::Value *a = ir_.CreateVectorSplat(unsigned(lanes_), four);
      for (int half = 0; half < 2; ++half) {
        llvm::Value *&sum = acc[size_t(2 * r + half)];
        sum = dot4(sum, a, b[size_t(half)]);
      }
    }
  }

  /// sum + per lane, the dot product of the 4 u8 of `a` with the 4 s8 of `b`.
  llvm::Value *dot4(llvm::Value *sum, llvm::Value *a, llvm::Value *b) {
    llvm::Module &module = *function_.getParent();
    switch (spec_.isa) {
    case IntegerGemmIsa::Amx: // rows short of a tile: the 512-bit VNNI kernel
    case IntegerGemmIsa::Avx512Vnni:
    case IntegerGemmIsa::AvxVnni: {
      auto id = spec_.isa == IntegerGemmIsa::AvxVnni ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                                     : llvm::Intrinsic::x86_avx512_vpdpbusd_512;
      llvm::Function *vnni = llvm::Intrinsic::getDeclaration(&module, id);
      // LLVM 19 types the operands as i32 vectors; later versions as bytes.
      llvm::FunctionType *type = vnni->getFunctionType();
      return ir_.CreateCall(vnni, {sum, ir_.CreateBitCast(a, type->getParamType(1)),
                                   ir_.CreateBitCast(b, type->getParamType(2))});
    }
    case IntegerGemmIsa::Avx2: {
      auto *bytes = llvm::FixedVectorType::get(ir_.getInt8Ty(), 32);
      auto *halves = llvm::FixedVectorType::get(ir_.getInt16Ty(), 16);
      llvm::Value *pairs = ir_.CreateCall(
          llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::x86_avx2_pmadd_ub_sw),
          {ir_.CreateBitCast(a, bytes), ir_.CreateBitCast(b, bytes)});
      llvm::Value *quads = ir_.CreateCall(
          llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::x86_avx2_pmadd_wd),
          {pairs, llvm::ConstantInt::get(halves, 1)});
      return ir_.CreateAdd(sum, quads);
    }
    case IntegerGemmIsa::Generic: {
      auto *bytes = llvm::FixedVectorType::get(ir_.getInt8Ty(), unsigned(lanes_ * 4));
      auto *wide = llvm::FixedVectorType::get(i32_, unsigned(lanes_ * 4));
      llvm::Value *products = ir_.CreateMul(ir_.CreateZExt(ir_.CreateBitCast(a, bytes), wide),
                                            ir_.CreateSExt(ir_.CreateBitCast(b, bytes), wide));
      for (int q = 0; q < 4; ++q) {
        std::vector<int> lanes;
        for (int64_t j = 0; j < lanes_; ++j)
          lanes.push_back(int(j * 4 + q));
        sum = ir_.CreateAdd(sum, ir_.CreateShuffleVector(products, lanes));
      }
      return sum;
    }
    }
    return sum;
  }

  /// The first `rowCount` rows of the tile.
  Accumulators emitMicroKernel(const std::array<llvm::Value *, MaxRows> &rows, int64_t rowCount,
                               llvm::Value *bPanel) {
    const int64_t groups = kPadded_ / 4, unroll = 4, unrolledEnd = groups / unroll * unroll;
    std::vector<llvm::Value *> zeros(size_t(2 * rowCount),
                                     llvm::Constant::getNullValue(intVector_));
    auto body = [&](int64_t steps) {
      return [&, steps](llvm::Value *group, llvm::ArrayRef<llvm::Value *> carried) {
        Accumulators acc{};
        std::copy(carried.begin(), carried.end(), acc.begin());
        for (int64_t u = 0; u < steps; ++u)
          stepGroup(ir_.CreateAdd(group, index(u)), rows, rowCount, bPanel, acc);
        return std::vector<llvm::Value *>(acc.begin(), acc.begin() + 2 * rowCount);
      };
    };
    std::vector<llvm::Value *> sums =
        loops_.emitLoop(index(0), index(unrolledEnd), unroll, zeros, body(unroll));
    if (unrolledEnd != groups)
      sums = loops_.emitLoop(index(unrolledEnd), index(groups), 1, sums, body(1));
    Accumulators acc{};
    std::copy(sums.begin(), sums.end(), acc.begin());
    return acc;
  }

  struct ColumnTerms {
    std::array<llvm::Value *, 2> scale, zero, adjust, bias, masks;
  };

  bool dequantizes() const { return spec_.store == IntegerGemmStore::Dequantize; }

  ColumnTerms loadColumnTerms(llvm::Value *col, int64_t width) {
    ColumnTerms terms{};
    llvm::Value *columns = arg(10);
    llvm::Value *aZero = ir_.CreateVectorSplat(unsigned(lanes_), arg(8));
    for (int half = 0; half < 2; ++half) {
      size_t h = size_t(half);
      llvm::Value *at = ir_.CreateAdd(col, index(half * lanes_));
      auto load = [&](llvm::Type *type, int64_t section) {
        return ir_.CreateAlignedLoad(type, wordAt(columns, ir_.CreateAdd(at, index(section))),
                                     llvm::Align(4));
      };
      // The padded columns are zeros in all three sections: no masks needed.
      if (dequantizes())
        terms.scale[h] =
            ir_.CreateFMul(ir_.CreateVectorSplat(unsigned(lanes_), arg(9)), load(floatVector_, 0));
      else if (spec_.store == IntegerGemmStore::Requantize)
        terms.scale[h] = load(floatVector_, 0);
      if (spec_.rowSums)
        terms.zero[h] = load(intVector_, nPadded_);
      terms.adjust[h] = ir_.CreateMul(aZero, load(intVector_, 2 * nPadded_));
      terms.masks[h] = mask(width, half);
      if (spec_.bias) {
        llvm::Type *type = dequantizes() ? floatVector_ : intVector_;
        llvm::Value *pointer =
            ir_.CreateInBoundsGEP(dequantizes() ? ir_.getFloatTy() : i32_, arg(11), at);
        if (terms.masks[h])
          terms.bias[h] = ir_.CreateMaskedLoad(type, pointer, llvm::Align(4), terms.masks[h],
                                               llvm::Constant::getNullValue(type));
        else
          terms.bias[h] = ir_.CreateAlignedLoad(type, pointer, llvm::Align(4));
      }
    }
    return terms;
  }

  /// The store's element type.
  llvm::Type *outputElement() {
    switch (spec_.store) {
    case IntegerGemmStore::Dequantize:
      return ir_.getFloatTy();
    case IntegerGemmStore::Int32:
      return i32_;
    case IntegerGemmStore::Requantize:
      return ir_.getInt8Ty();
    }
    return i32_;
  }

  /// saturate(roundeven(f64(sum) * f64(multiplier) + outputZero)) as bytes.
  /// Clamping first leaves the rounding to values of magnitude <= 255,
  /// where adding and subtracting 1.5 * 2^52 rounds half to even exactly
  /// (no libm call, any x86-64).
  llvm::Value *requantize(llvm::Value *sum, llvm::Value *multiplier) {
    auto *doubles = llvm::FixedVectorType::get(ir_.getDoubleTy(), unsigned(lanes_));
    auto splat = [&](double v) { return llvm::ConstantFP::get(doubles, v); };
    llvm::Value *value = ir_.CreateFAdd(
        ir_.CreateFMul(ir_.CreateSIToFP(sum, doubles), ir_.CreateFPExt(multiplier, doubles)),
        splat(double(spec_.outputZero)));
    llvm::Value *low = splat(spec_.signedOutput ? -128.0 : 0.0);
    llvm::Value *high = splat(spec_.signedOutput ? 127.0 : 255.0);
    value = ir_.CreateSelect(ir_.CreateFCmpOLT(value, low), low, value);
    value = ir_.CreateSelect(ir_.CreateFCmpOLT(high, value), high, value);
    llvm::Value *magic = splat(6755399441055744.0); // 1.5 * 2^52
    value = ir_.CreateFSub(ir_.CreateFAdd(value, magic), magic);
    auto *bytes = llvm::FixedVectorType::get(ir_.getInt8Ty(), unsigned(lanes_));
    return ir_.CreateTrunc(ir_.CreateFPToSI(value, intVector_), bytes);
  }

  void emitStoreRow(const ColumnTerms &terms, const Accumulators &acc, int64_t r, llvm::Value *row,
                    llvm::Value *col) {
    llvm::Value *rowSums = nullptr;
    if (spec_.rowSums) {
      llvm::Value *rowSum = ir_.CreateAlignedLoad(i32_, wordAt(arg(7), row), llvm::Align(4));
      rowSums = ir_.CreateVectorSplat(unsigned(lanes_), rowSum);
    }
    llvm::Type *element = outputElement();
    llvm::Value *cRow =
        ir_.CreateInBoundsGEP(element, arg(3), ir_.CreateAdd(ir_.CreateMul(row, arg(4)), col));
    for (int half = 0; half < 2; ++half) {
      size_t h = size_t(half);
      if (terms.masks[h] && llvm::cast<llvm::Constant>(terms.masks[h])->isNullValue())
        continue;
      // s32 wrapping arithmetic, as MatMulInteger's int32 result.
      llvm::Value *exact = acc[size_t(2 * r + half)];
      if (rowSums)
        exact = ir_.CreateSub(exact, ir_.CreateMul(terms.zero[h], rowSums));
      exact = ir_.CreateAdd(exact, terms.adjust[h]);
      llvm::Value *value = nullptr;
      if (dequantizes()) {
        // No fast-math flags: the multiply and add stay separately rounded
        // (not contracted into an FMA), exactly as the evaluator computes them.
        value = ir_.CreateFMul(ir_.CreateSIToFP(exact, floatVector_), terms.scale[h]);
        if (terms.bias[h])
          value = ir_.CreateFAdd(value, terms.bias[h]);
      } else {
        if (terms.bias[h])
          exact = ir_.CreateAdd(exact, terms.bias[h]);
        value = spec_.store == IntegerGemmStore::Int32 ? exact : requantize(exact, terms.scale[h]);
      }
      llvm::Value *pointer = ir_.CreateInBoundsGEP(element, cRow, index(half * lanes_));
      llvm::Align align(spec_.store == IntegerGemmStore::Requantize ? 1 : 4);
      if (terms.masks[h])
        ir_.CreateMaskedStore(value, pointer, align, terms.masks[h]);
      else
        ir_.CreateAlignedStore(value, pointer, align);
    }
  }

  /// Rows [row, row + 32) x the panel at `bPanel` on TDPBUSD tiles: per 64
  /// k, two A tiles (rows of A in place, lda apart) and two B tiles (the
  /// panel's group rows, 128 bytes apart: columns 0-15, then 16-31); the
  /// sums go to the tile scratch, then through the vector kernels' store.
  void emitAmxTile(const ColumnTerms &terms, llvm::Value *row, llvm::Value *col,
                   llvm::Value *bPanel) {
    for (int c = 0; c < 4; ++c)
      callX86(llvm::Intrinsic::x86_tilezero, {tile(c)});
    llvm::Value *a0 = byteAt(arg(0), ir_.CreateMul(row, arg(1)));
    llvm::Value *a1 = byteAt(a0, ir_.CreateMul(index(16), arg(1)));
    loops_.emitLoop(index(0), index(kPadded_), 64, [&](llvm::Value *k) {
      llvm::Value *b0 = byteAt(bPanel, ir_.CreateMul(k, index(nr_)));
      callX86(llvm::Intrinsic::x86_tileloadd64, {tile(4), byteAt(a0, k), arg(1)});
      callX86(llvm::Intrinsic::x86_tileloadd64, {tile(6), b0, index(nr_ * 4)});
      callX86(llvm::Intrinsic::x86_tdpbusd, {tile(0), tile(4), tile(6)});
      callX86(llvm::Intrinsic::x86_tileloadd64, {tile(7), byteAt(b0, index(64)), index(nr_ * 4)});
      callX86(llvm::Intrinsic::x86_tdpbusd, {tile(1), tile(4), tile(7)});
      callX86(llvm::Intrinsic::x86_tileloadd64, {tile(5), byteAt(a1, k), arg(1)});
      callX86(llvm::Intrinsic::x86_tdpbusd, {tile(2), tile(5), tile(6)});
      callX86(llvm::Intrinsic::x86_tdpbusd, {tile(3), tile(5), tile(7)});
    });
    for (int c = 0; c < 4; ++c)
      callX86(llvm::Intrinsic::x86_tilestored64,
              {tile(c), wordAt(tileScratch_, index((c / 2) * 16 * nr_ + (c % 2) * lanes_)),
               index(nr_ * 4)});
    loops_.emitLoop(index(0), index(kAmxRows), 1, [&](llvm::Value *r) {
      Accumulators acc{};
      for (int half = 0; half < 2; ++half)
        acc[size_t(half)] = ir_.CreateAlignedLoad(
            intVector_,
            wordAt(tileScratch_, ir_.CreateAdd(ir_.CreateMul(r, index(nr_)), index(half * lanes_))),
            llvm::Align(64));
      emitStoreRow(terms, acc, 0, ir_.CreateAdd(row, r), col);
    });
  }

  void emitPanel(llvm::Value *col, int64_t width) {
    ColumnTerms terms = loadColumnTerms(col, width);
    llvm::Value *bPanel = byteAt(arg(2), ir_.CreateMul(col, index(kPadded_)));
    llvm::Value *rowBegin = arg(5), *rowEnd = arg(6);
    if (spec_.isa == IntegerGemmIsa::Amx) {
      // Whole 32-row tiles on TDPBUSD; the rows after them on vectors.
      llvm::Value *tiles = ir_.CreateSDiv(ir_.CreateSub(rowEnd, rowBegin), index(kAmxRows));
      llvm::Value *tileEnd = ir_.CreateAdd(rowBegin, ir_.CreateMul(tiles, index(kAmxRows)));
      loops_.emitLoop(rowBegin, tileEnd, kAmxRows,
                      [&](llvm::Value *row) { emitAmxTile(terms, row, col, bPanel); });
      rowBegin = tileEnd;
    }
    loops_.emitLoop(rowBegin, rowEnd, mr_, [&](llvm::Value *row) {
      llvm::Value *tileRows = min(index(mr_), ir_.CreateSub(rowEnd, row));
      std::array<llvm::Value *, MaxRows> rows{};
      for (int64_t r = 0; r < mr_; ++r) {
        llvm::Value *inTile = r == 0 ? index(0) : min(index(r), ir_.CreateSub(tileRows, index(1)));
        rows[size_t(r)] = byteAt(arg(0), ir_.CreateMul(ir_.CreateAdd(row, inTile), arg(1)));
      }
      auto tile = [&](int64_t rowCount) {
        Accumulators acc = emitMicroKernel(rows, rowCount, bPanel);
        for (int64_t r = 0; r < rowCount; ++r) {
          auto store = [&] { emitStoreRow(terms, acc, r, ir_.CreateAdd(row, index(r)), col); };
          if (r == 0)
            store();
          else
            loops_.emitIf(ir_.CreateICmpSGT(tileRows, index(r)), store);
        }
      };
      // A single row (M = 1: a decoder's token) runs a one-row kernel; other
      // tails the full one, whose extra rows are not stored.
      loops_.emitIf(
          ir_.CreateICmpEQ(tileRows, index(1)), [&] { tile(1); }, [&] { tile(mr_); });
    });
  }

  GemmIRBuilder &loops_;
  llvm::IRBuilder<> &ir_;
  llvm::Function &function_;
  const IntegerGemmSpec &spec_;
  const int64_t lanes_, nr_, mr_, kPadded_, nPadded_;
  llvm::Type *i32_;
  llvm::VectorType *intVector_, *floatVector_;
  llvm::Value *tileConfig_ = nullptr, *tileScratch_ = nullptr;
};

} // namespace

llvm::Function *emitIntegerGemm(llvm::Module &module, const IntegerGemmSpec &spec) {
  if (spec.k <= 0 || spec.n <= 0)
    fail("integer gemm kernel '", spec.name, "': K=", spec.k, " N=", spec.n, " must be positive");
  if (module.getFunction(spec.name))
    fail("integer gemm kernel '", spec.name, "' is already defined in module '",
         module.getName().str(), "'");
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context), *i32 = llvm::Type::getInt32Ty(context);
  auto *type = llvm::FunctionType::get(
      llvm::Type::getVoidTy(context),
      {ptr, i64, ptr, ptr, i64, i64, i64, ptr, i32, llvm::Type::getFloatTy(context), ptr, ptr},
      /*isVarArg=*/false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, spec.name, module);
  const char *names[] = {"a",      "lda",     "packedB", "c",      "ldc",     "rowBegin",
                         "rowEnd", "rowSums", "aZero",   "aScale", "columns", "bias"};
  for (unsigned i = 0; i < 12; ++i)
    function->getArg(i)->setName(names[i]);
  for (unsigned i : {0u, 2u, 7u, 10u, 11u}) {
    function->addParamAttr(i, llvm::Attribute::ReadOnly);
    function->addParamAttr(i, llvm::Attribute::NoCapture);
  }
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoFree);
  // As the fp32 kernel: keep <16 x i32> whole zmm registers on CPUs tuned
  // for 256-bit vectors.
  if (spec.isa == IntegerGemmIsa::Avx512Vnni || spec.isa == IntegerGemmIsa::Amx)
    function->addFnAttr("min-legal-vector-width", "512");

  // GemmIRBuilder serves only as the loop and branch emitter here (its
  // float tile scratch is unused and optimized away).
  GemmBlocking loopsOnly;
  loopsOnly.packA = false;
  GemmIRBuilder loops(*function, loopsOnly);
  TileEmitter(loops, *function, spec).emit();
  loops.ir().CreateRetVoid();
  return function;
}

} // namespace onnxc
