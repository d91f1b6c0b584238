//===- codegen/lower/FunctionBuilder.cpp - IRBuilder for kernel bodies -----===//

#include "codegen/lower/FunctionBuilder.h"

#include "codegen/kernels/CountedLoop.h"

#include "ir/Error.h"

#include "llvm/IR/Intrinsics.h"

using namespace llvm;

namespace onnxc::lower {

FunctionBuilder::FunctionBuilder(llvm::Function *function, llvm::Value *symbols,
                                 const SymbolIndex &symbolIndex)
    : function_(function), symbols_(symbols), symbolIndex_(symbolIndex),
      builder_(function->getContext()), entryBuilder_(function->getContext()) {
  LLVMContext &ctx = function->getContext();
  BasicBlock *entry = BasicBlock::Create(ctx, "entry", function);
  BasicBlock *body = BasicBlock::Create(ctx, "body", function);
  // The entry block only ever falls through to the body; hoisted values go
  // before this branch.
  BranchInst *toBody = BranchInst::Create(body, entry);
  entryBuilder_.SetInsertPoint(toBody);
  builder_.SetInsertPoint(body);
}

// ---- integers ------------------------------------------------------------

llvm::Value *FunctionBuilder::dim(const Dim &d) {
  if (d.isUnknown())
    fail("codegen: a dimension is unknown (data-dependent shapes cannot be compiled)");
  if (auto c = d.constant())
    return i64(*c);
  std::string key = d.str();
  if (auto it = dimCache_.find(key); it != dimCache_.end())
    return it->second;
  IRBuilder<> &b = entryBuilder_;
  llvm::Value *sum = b.getInt64(0);
  for (const auto &[monomial, coefficient] : d.terms()) {
    llvm::Value *term = b.getInt64(coefficient);
    for (const std::string &symbol : monomial) {
      auto found = symbolIndex_.find(symbol);
      if (found == symbolIndex_.end())
        fail("codegen: symbol '", symbol, "' is not bound by any model input dimension");
      llvm::Value *address = b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), symbols_, found->second);
      llvm::Value *symbolValue = b.CreateLoad(b.getInt64Ty(), address, symbol);
      term = b.CreateMul(term, symbolValue);
    }
    sum = b.CreateAdd(sum, term);
  }
  dimCache_[key] = sum;
  return sum;
}

std::vector<llvm::Value *> FunctionBuilder::dims(const Shape &shape) {
  std::vector<llvm::Value *> result;
  for (size_t i = 0; i < shape.rank(); ++i)
    result.push_back(dim(shape[i]));
  return result;
}

llvm::Value *FunctionBuilder::numElements(const Shape &shape) {
  llvm::Value *n = i64(1);
  for (size_t i = 0; i < shape.rank(); ++i)
    n = entryBuilder_.CreateMul(n, dim(shape[i]));
  return n;
}

std::vector<llvm::Value *> FunctionBuilder::strides(const Shape &shape) {
  std::vector<llvm::Value *> result(shape.rank());
  llvm::Value *stride = i64(1);
  for (size_t i = shape.rank(); i-- > 0;) {
    result[i] = stride;
    stride = entryBuilder_.CreateMul(stride, dim(shape[i]));
  }
  return result;
}

std::vector<llvm::Value *> FunctionBuilder::broadcastStrides(const Shape &operand,
                                                             const Shape &result) {
  size_t rank = result.rank();
  if (operand.rank() > rank)
    fail("codegen: broadcast of rank ", operand.rank(), " to rank ", rank);
  std::vector<llvm::Value *> own = strides(operand);
  std::vector<llvm::Value *> out(rank, i64(0));
  size_t lead = rank - operand.rank();
  for (size_t i = 0; i < operand.rank(); ++i) {
    const Dim &d = operand[i];
    if (d.constant() == std::optional<int64_t>(1) && !result[lead + i].provablyEqual(Dim(1)))
      continue; // broadcast axis
    if (d.provablyEqual(result[lead + i])) {
      out[lead + i] = own[i];
      continue;
    }
    // A symbolic dim that may be 1 at run time while the result's is not:
    // stride 0 exactly when the operand's extent is 1.
    llvm::Value *isOne = entryBuilder_.CreateICmpEQ(dim(d), i64(1));
    out[lead + i] = entryBuilder_.CreateSelect(isOne, i64(0), own[i]);
  }
  return out;
}

llvm::Value *FunctionBuilder::offset(ArrayRef<llvm::Value *> index,
                                     ArrayRef<llvm::Value *> stridesOf) {
  llvm::Value *sum = i64(0);
  for (size_t i = 0; i < index.size(); ++i) {
    if (auto *c = dyn_cast<ConstantInt>(stridesOf[i]); c && c->isZero())
      continue;
    sum = builder_.CreateAdd(sum, builder_.CreateMul(index[i], stridesOf[i]));
  }
  return sum;
}

std::vector<llvm::Value *> FunctionBuilder::unflatten(llvm::Value *linear,
                                                      ArrayRef<llvm::Value *> extents) {
  std::vector<llvm::Value *> index(extents.size());
  llvm::Value *rest = linear;
  for (size_t i = extents.size(); i-- > 0;) {
    if (i == 0) {
      index[0] = rest;
      break;
    }
    index[i] = builder_.CreateURem(rest, extents[i]);
    rest = builder_.CreateUDiv(rest, extents[i]);
  }
  return index;
}

llvm::Value *FunctionBuilder::ceilDiv(llvm::Value *a, llvm::Value *b) {
  IRBuilder<> &ir = builder_;
  return ir.CreateUDiv(ir.CreateAdd(a, ir.CreateSub(b, i64(1))), b);
}

llvm::Value *FunctionBuilder::min(llvm::Value *a, llvm::Value *b) {
  return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), a, b);
}

llvm::Value *FunctionBuilder::max(llvm::Value *a, llvm::Value *b) {
  return builder_.CreateSelect(builder_.CreateICmpSGT(a, b), a, b);
}

// ---- elements ------------------------------------------------------------

Type *FunctionBuilder::storageType(DType type) {
  LLVMContext &ctx = context();
  switch (type) {
  case DType::F32:
    return Type::getFloatTy(ctx);
  case DType::F64:
    return Type::getDoubleTy(ctx);
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return Type::getInt16Ty(ctx);
  case DType::I8:
  case DType::U8:
  case DType::I4:
  case DType::U4:
  case DType::Bool:
    return Type::getInt8Ty(ctx);
  case DType::I32:
  case DType::U32:
    return Type::getInt32Ty(ctx);
  case DType::I64:
  case DType::U64:
    return Type::getInt64Ty(ctx);
  case DType::Unknown:
    break;
  }
  fail("codegen: a value of unknown element type");
}

Type *FunctionBuilder::computeType(DType type) {
  if (type == DType::F16 || type == DType::BF16)
    return Type::getFloatTy(context());
  if (type == DType::Bool)
    return Type::getInt1Ty(context());
  return storageType(type);
}

namespace {

/// IEEE binary16 bits -> float, exactly (subnormals included), by bit
/// manipulation so no libcall is needed on targets without F16C.
llvm::Value *halfBitsToFloat(IRBuilderBase &b, llvm::Value *bits16) {
  Type *i32 = b.getInt32Ty();
  llvm::Value *h = b.CreateZExt(bits16, i32);
  llvm::Value *sign = b.CreateShl(b.CreateAnd(h, 0x8000), 16);
  llvm::Value *magnitude = b.CreateAnd(h, 0x7fff);
  // Normal and subnormal numbers: shift the exponent/mantissa into place and
  // scale by 2^112 (rebias 15 -> 127); the float multiply renormalizes
  // subnormals exactly.
  llvm::Value *shifted = b.CreateShl(magnitude, 13);
  llvm::Value *scaled = b.CreateFMul(b.CreateBitCast(shifted, b.getFloatTy()),
                                     ConstantFP::get(b.getFloatTy(), 0x1.0p112));
  // Inf/NaN: exponent all ones.
  llvm::Value *isSpecial = b.CreateICmpUGE(magnitude, b.getInt32(0x7c00));
  llvm::Value *special = b.CreateOr(b.CreateShl(magnitude, 13), b.getInt32(0x7f800000));
  llvm::Value *magnitudeBits = b.CreateSelect(isSpecial, special, b.CreateBitCast(scaled, i32));
  return b.CreateBitCast(b.CreateOr(magnitudeBits, sign), b.getFloatTy());
}

/// float -> IEEE binary16 bits, round to nearest even, overflow to inf,
/// NaN kept quiet.
llvm::Value *floatToHalfBits(IRBuilderBase &b, llvm::Value *f) {
  Type *i32 = b.getInt32Ty();
  llvm::Value *x = b.CreateBitCast(f, i32);
  llvm::Value *sign = b.CreateAnd(b.CreateLShr(x, 16), 0x8000);
  llvm::Value *magnitude = b.CreateAnd(x, 0x7fffffff);
  llvm::Value *absF = b.CreateBitCast(magnitude, b.getFloatTy());
  // Normal range: add the rounding bias on the bit pattern.
  // rounded = (m + 0xfff + ((m >> 13) & 1)) >> 13, rebias exponent by -112<<10.
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(magnitude, 13), 1);
  llvm::Value *roundedNormal =
      b.CreateLShr(b.CreateAdd(b.CreateAdd(magnitude, b.getInt32(0xfff)), lsb), 13);
  llvm::Value *normal = b.CreateSub(roundedNormal, b.getInt32(112 << 10));
  // Subnormal range (|f| < 2^-14): the float add with 0.5 aligns the
  // mantissa so the hardware rounds to nearest even for us.
  llvm::Value *sub = b.CreateFAdd(absF, ConstantFP::get(b.getFloatTy(), 0.5));
  llvm::Value *subnormal = b.CreateSub(b.CreateBitCast(sub, i32), b.getInt32(0x3f000000));
  llvm::Value *isSub = b.CreateICmpULT(magnitude, b.getInt32(113 << 23));
  llvm::Value *isOverflow =
      b.CreateICmpUGE(magnitude, b.getInt32(0x47800000 - 0x1000)); // rounds to inf
  llvm::Value *isNaN = b.CreateICmpUGT(magnitude, b.getInt32(0x7f800000));
  llvm::Value *bits = b.CreateSelect(isSub, subnormal, normal);
  bits = b.CreateSelect(isOverflow, b.getInt32(0x7c00), bits);
  bits = b.CreateSelect(isNaN, b.getInt32(0x7e00), bits);
  return b.CreateTrunc(b.CreateOr(bits, sign), b.getInt16Ty());
}

llvm::Value *bfloatBitsToFloat(IRBuilderBase &b, llvm::Value *bits16) {
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits16, b.getInt32Ty()), 16), b.getFloatTy());
}

/// float -> bfloat16 bits, round to nearest even, NaN kept quiet.
llvm::Value *floatToBfloatBits(IRBuilderBase &b, llvm::Value *f) {
  llvm::Value *x = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(x, 16), 1);
  llvm::Value *rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(x, b.getInt32(0x7fff)), lsb), 16);
  llvm::Value *isNaN = b.CreateICmpUGT(b.CreateAnd(x, 0x7fffffff), b.getInt32(0x7f800000));
  llvm::Value *quiet = b.CreateOr(b.CreateLShr(x, 16), b.getInt32(0x40));
  return b.CreateTrunc(b.CreateSelect(isNaN, quiet, rounded), b.getInt16Ty());
}

} // namespace

llvm::Value *FunctionBuilder::elementAddress(DType type, llvm::Value *base, llvm::Value *index) {
  return builder_.CreateInBoundsGEP(storageType(type), base, index);
}

llvm::Value *FunctionBuilder::loadElement(DType type, llvm::Value *base, llvm::Value *index) {
  llvm::Value *raw = builder_.CreateLoad(storageType(type), elementAddress(type, base, index));
  switch (type) {
  case DType::F16:
    return halfBitsToFloat(builder_, raw);
  case DType::BF16:
    return bfloatBitsToFloat(builder_, raw);
  case DType::Bool:
    return builder_.CreateICmpNE(raw, builder_.getInt8(0));
  default:
    return raw;
  }
}

void FunctionBuilder::storeElement(DType type, llvm::Value *value, llvm::Value *base,
                                   llvm::Value *index) {
  llvm::Value *raw = value;
  switch (type) {
  case DType::F16:
    raw = floatToHalfBits(builder_, value);
    break;
  case DType::BF16:
    raw = floatToBfloatBits(builder_, value);
    break;
  case DType::Bool:
    raw = builder_.CreateZExt(value, builder_.getInt8Ty());
    break;
  default:
    break;
  }
  builder_.CreateStore(raw, elementAddress(type, base, index));
}

llvm::Value *wrapToFourBits(IRBuilderBase &b, llvm::Value *value, DType type) {
  llvm::Constant *four = ConstantInt::get(value->getType(), 4);
  if (type == DType::I4)
    return b.CreateAShr(b.CreateShl(value, four), four);
  return b.CreateAnd(value, ConstantInt::get(value->getType(), 0xf));
}

llvm::Value *FunctionBuilder::convert(llvm::Value *value, DType from, DType to) {
  if (from != to && isFourBit(to)) // through i32, then the low 4 bits (ONNX's Cast)
    return wrapToFourBits(
        builder_, builder_.CreateTrunc(convert(value, from, DType::I32), builder_.getInt8Ty()), to);
  IRBuilder<> &b = builder_;
  Type *target = computeType(to);
  // Same dtype, or the same register type with the same meaning (f16 and
  // bf16 are both computed as float).
  if (from == to || (value->getType() == target && isFloat(from) == isFloat(to) &&
                     isSignedInt(from) == isSignedInt(to)))
    return value;
  if (to == DType::Bool) {
    if (isFloat(from))
      return b.CreateFCmpUNE(value, ConstantFP::get(value->getType(), 0.0));
    return b.CreateICmpNE(value, ConstantInt::get(value->getType(), 0));
  }
  if (from == DType::Bool)
    return isFloat(to) ? b.CreateUIToFP(value, target) : b.CreateZExt(value, target);
  if (isFloat(from) && isFloat(to))
    return b.CreateFPCast(value, target);
  if (isFloat(from)) {
    // fptosi/fptoui of NaN or an out-of-range value is poison in LLVM; the
    // saturating intrinsics give a defined result (NaN -> 0, clamp).
    Intrinsic::ID id = isSignedInt(to) ? Intrinsic::fptosi_sat : Intrinsic::fptoui_sat;
    return b.CreateIntrinsic(id, {target, value->getType()}, {value});
  }
  if (isFloat(to))
    return isSignedInt(from) ? b.CreateSIToFP(value, target) : b.CreateUIToFP(value, target);
  return b.CreateIntCast(value, target, isSignedInt(from));
}

llvm::Value *FunctionBuilder::constant(DType type, double value) {
  Type *t = computeType(type);
  if (t->isFloatingPointTy())
    return ConstantFP::get(t, value);
  if (type == DType::Bool)
    return builder_.getInt1(value != 0);
  if (isSignedInt(type))
    return ConstantInt::getSigned(t, int64_t(value));
  return ConstantInt::get(t, uint64_t(value));
}

// ---- control flow --------------------------------------------------------

void FunctionBuilder::forRange(llvm::Value *begin, llvm::Value *end,
                               function_ref<void(llvm::Value *)> body, int64_t step,
                               const char *name) {
  forRangeCarried(
      begin, end, {},
      [&](llvm::Value *iv, ArrayRef<llvm::Value *>) -> std::vector<llvm::Value *> {
        body(iv);
        return {};
      },
      step, name);
}

std::vector<llvm::Value *> FunctionBuilder::forRangeCarried(
    llvm::Value *begin, llvm::Value *end, ArrayRef<llvm::Value *> init,
    function_ref<std::vector<llvm::Value *>(llvm::Value *, ArrayRef<llvm::Value *>)> body,
    int64_t step, const char *name) {
  CountedLoopShape shape;
  shape.header = std::string(name) + ".head";
  shape.body = std::string(name) + ".body";
  shape.exit = std::string(name) + ".exit";
  shape.iv = name;
  shape.next = std::string(name) + ".next";
  auto checkedBody = [&](llvm::Value *iv, ArrayRef<llvm::Value *> carried) {
    std::vector<llvm::Value *> next = body(iv, carried);
    if (next.size() != carried.size())
      fail("codegen: a loop body returned ", next.size(), " carried values, expected ",
           carried.size());
    return next;
  };
  return emitCountedLoop(builder_, shape, begin, end, step, init, checkedBody);
}

void FunctionBuilder::loopNest(ArrayRef<llvm::Value *> extents,
                               function_ref<void(ArrayRef<llvm::Value *>)> body) {
  std::vector<llvm::Value *> index;
  std::function<void(size_t)> level = [&](size_t axis) {
    if (axis == extents.size()) {
      body(index);
      return;
    }
    forRange(i64(0), extents[axis], [&](llvm::Value *iv) {
      index.push_back(iv);
      level(axis + 1);
      index.pop_back();
    });
  };
  level(0);
}

void FunctionBuilder::ifThen(llvm::Value *condition, function_ref<void()> then) {
  IRBuilder<> &b = builder_;
  BasicBlock *thenBlock = BasicBlock::Create(context(), "then", function_);
  BasicBlock *join = BasicBlock::Create(context(), "endif", function_);
  b.CreateCondBr(condition, thenBlock, join);
  b.SetInsertPoint(thenBlock);
  then();
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

void FunctionBuilder::ifThenElse(llvm::Value *condition, function_ref<void()> then,
                                 function_ref<void()> otherwise) {
  IRBuilder<> &b = builder_;
  BasicBlock *thenBlock = BasicBlock::Create(context(), "then", function_);
  BasicBlock *elseBlock = BasicBlock::Create(context(), "else", function_);
  BasicBlock *join = BasicBlock::Create(context(), "endif", function_);
  b.CreateCondBr(condition, thenBlock, elseBlock);
  b.SetInsertPoint(thenBlock);
  then();
  b.CreateBr(join);
  b.SetInsertPoint(elseBlock);
  otherwise();
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

void FunctionBuilder::finish(llvm::Value *returnValue) {
  if (returnValue)
    builder_.CreateRet(returnValue);
  else
    builder_.CreateRetVoid();
}

} // namespace onnxc::lower
