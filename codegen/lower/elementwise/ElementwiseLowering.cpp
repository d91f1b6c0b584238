//===- codegen/lower/elementwise/ElementwiseLowering.cpp - Elementwise kernels -===//
//
// One kernel per elementwise node, or per fused chain (ElementwiseFusion.h).
// The kernel walks the result's elements in the iteration space of
// ElementwiseLayout.h: the task range [begin, end) of the flat result index
// is cut into row segments of the innermost (merged) axis; per row each
// operand has a base offset, and along the row it is read contiguously, as
// one splatted value, or with a stride. When every operand is contiguous or
// splatted, every dtype involved has a vector form (all but f16/bf16) and no
// op needs scalar code, rows are processed in <8 x T> chunks with one masked
// chunk for the row's tail; otherwise one element at a time. Operands that
// are one-element constants become immediates; other one-element operands
// are loaded once per call. An integer Div/Mod by zero fails the kernel
// (one check per chunk), as the evaluator fails.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/elementwise/ElementwiseFusion.h"
#include "codegen/lower/elementwise/ElementwiseLayout.h"
#include "codegen/lower/elementwise/ElementwiseOps.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"

#include <cstring>
#include <map>

using namespace llvm;

namespace onnxc::lower {

namespace {

constexpr unsigned kVectorWidth = 8;
/// Elements per task: enough to amortize a task (a few microseconds of
/// adds), fewer when each element costs a polynomial or a libm call.
constexpr int64_t kGrain = 16384;
constexpr int64_t kExpensiveGrain = 4096;

/// The value of a one-element constant, as an immediate of its compute type
/// (read from the raw bytes, so 64-bit integers stay exact).
llvm::Constant *immediateOf(FunctionBuilder &f, const Tensor &tensor) {
  DType type = tensor.dtype();
  llvm::Type *computeType = f.computeType(type);
  const auto *raw = static_cast<const uint8_t *>(tensor.rawData());
  switch (type) {
  case DType::F32: {
    float v;
    std::memcpy(&v, raw, sizeof v);
    return ConstantFP::get(computeType, double(v));
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, raw, sizeof v);
    return ConstantFP::get(computeType, v);
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, raw, sizeof bits);
    return ConstantFP::get(computeType,
                           double(type == DType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits)));
  }
  case DType::Bool:
    return ConstantInt::get(computeType, raw[0] != 0 ? 1 : 0);
  default: {
    uint64_t bits = 0; // little-endian: the element's bytes are the low bits
    std::memcpy(&bits, raw, dtypeSize(type));
    return ConstantInt::get(computeType, bits);
  }
  }
}

/// Emits the kernel of one group.
class GroupKernel {
public:
  GroupKernel(LoweringContext &context, const ElementwiseGroup &group)
      : context_(context), group_(group), step_(context, group.stepName(), group.kernelName()),
        k_(step_.kernel()) {}

  void emit();

private:
  struct External {
    const onnxc::Value *value;
    unsigned slot;
    OperandLayout layout;
    bool invariant; // every stride 0: one load per call
  };

  void collectOperands();
  unsigned chooseWidth() const;
  llvm::Value *stride(const LayoutStride &s);
  void emitSegment(llvm::Value *jBegin, llvm::Value *jEnd, llvm::Value *rowStart,
                   const std::vector<llvm::Value *> &bases);
  void emitChunk(llvm::Value *j, llvm::Value *mask, llvm::Value *rowStart,
                 const std::vector<llvm::Value *> &bases,
                 const std::map<const onnxc::Value *, llvm::Value *> &rowValues);
  /// A half or bfloat16 intermediate rounded as its tensor would hold it
  /// (the evaluator rounds after every op; Cast to f16 must round).
  llvm::Value *roundToStorage(DType type, llvm::Value *value);
  llvm::Value *loadVector(DType type, llvm::Value *base, llvm::Value *index, llvm::Value *mask);
  void storeVector(DType type, llvm::Value *value, llvm::Value *base, llvm::Value *index,
                   llvm::Value *mask);

  LoweringContext &context_;
  const ElementwiseGroup &group_;
  StepBuilder step_;
  KernelBuilder &k_;
  std::vector<External> externals_;
  std::map<const onnxc::Value *, const Tensor *> immediates_;
  std::vector<Dim> extents_;
  unsigned width_ = 1;
  unsigned outputSlot_ = 0;
  std::map<const onnxc::Value *, llvm::Value *> invariantValues_;
  std::vector<std::vector<llvm::Value *>> strides_;
  llvm::Value *scratch_ = nullptr;
};

void GroupKernel::collectOperands() {
  std::map<const onnxc::Value *, bool> internal, seen;
  std::vector<const onnxc::Value *> memoryOperands;
  for (const Node *node : group_.nodes) {
    for (size_t i = 0; i < node->numOperands(); ++i) {
      const onnxc::Value *operand = node->operand(i);
      if (!operand || internal.count(operand) || seen.count(operand) ||
          (node->kind() == OpKind::CastLike && i == 1))
        continue;
      seen[operand] = true;
      const Tensor *constant = context_.constantValue(operand);
      if (constant && isSingleElementShape(operand->shape()) && constant->numElements() == 1)
        immediates_[operand] = constant;
      else
        memoryOperands.push_back(operand);
    }
    internal[node->result(0)] = true;
  }
  std::vector<Shape> shapes;
  for (const onnxc::Value *operand : memoryOperands)
    shapes.push_back(operand->shape());
  IterationSpace space = planIterationSpace(group_.result()->shape(), shapes);
  extents_ = space.extents;
  for (size_t o = 0; o < memoryOperands.size(); ++o) {
    bool invariant = true;
    for (const LayoutStride &s : space.operands[o].strides)
      invariant = invariant && s.stride == Dim(0);
    externals_.push_back(
        {memoryOperands[o], step_.input(memoryOperands[o]), space.operands[o], invariant});
  }
  outputSlot_ = step_.output(group_.result());
}

unsigned GroupKernel::chooseWidth() const {
  auto vectorizable = [](DType type) { return type != DType::F16 && type != DType::BF16; };
  for (const External &external : externals_)
    if (!vectorizable(external.value->dtype()) || external.layout.inner == InnerAccess::Strided)
      return 1;
  for (const auto &[value, tensor] : immediates_)
    if (!vectorizable(value->dtype()))
      return 1;
  for (const Node *node : group_.nodes)
    if (needsScalarEmission(*node) || !vectorizable(node->result(0)->dtype()))
      return 1;
  return kVectorWidth;
}

llvm::Value *GroupKernel::stride(const LayoutStride &s) {
  llvm::Value *value = k_.dim(s.stride);
  if (!s.zeroWhenOne)
    return value;
  IRBuilder<> &b = k_.hoisted();
  return b.CreateSelect(b.CreateICmpEQ(k_.dim(*s.zeroWhenOne), k_.i64(1)), k_.i64(0), value);
}

llvm::Value *GroupKernel::roundToStorage(DType type, llvm::Value *value) {
  // Through a stack slot with the framework's conversions; SROA turns the
  // store and load back into register operations.
  if (!scratch_)
    scratch_ = k_.hoisted().CreateAlloca(k_.storageType(type), nullptr, "round");
  k_.storeElement(type, value, scratch_, k_.i64(0));
  return k_.loadElement(type, scratch_, k_.i64(0));
}

llvm::Value *GroupKernel::loadVector(DType type, llvm::Value *base, llvm::Value *index,
                                     llvm::Value *mask) {
  IRBuilder<> &b = k_.ir();
  auto *vectorType = FixedVectorType::get(k_.storageType(type), width_);
  llvm::Value *address = k_.elementAddress(type, base, index);
  Align align(dtypeSize(type));
  llvm::Value *raw;
  if (mask)
    raw = b.CreateMaskedLoad(vectorType, address, align, mask, Constant::getNullValue(vectorType));
  else
    raw = b.CreateAlignedLoad(vectorType, address, align);
  if (type == DType::Bool)
    return b.CreateICmpNE(raw, Constant::getNullValue(vectorType));
  return raw;
}

void GroupKernel::storeVector(DType type, llvm::Value *value, llvm::Value *base, llvm::Value *index,
                              llvm::Value *mask) {
  IRBuilder<> &b = k_.ir();
  if (type == DType::Bool)
    value = b.CreateZExt(value, FixedVectorType::get(b.getInt8Ty(), width_));
  llvm::Value *address = k_.elementAddress(type, base, index);
  Align align(dtypeSize(type));
  if (mask)
    b.CreateMaskedStore(value, address, align, mask);
  else
    b.CreateAlignedStore(value, address, align);
}

void GroupKernel::emitChunk(llvm::Value *j, llvm::Value *mask, llvm::Value *rowStart,
                            const std::vector<llvm::Value *> &bases,
                            const std::map<const onnxc::Value *, llvm::Value *> &rowValues) {
  IRBuilder<> &b = k_.ir();
  ElementEmitter emitter(k_, width_);
  std::map<const onnxc::Value *, llvm::Value *> values = rowValues;
  for (const auto &[value, tensor] : immediates_)
    values[value] = emitter.splat(immediateOf(k_, *tensor));
  for (size_t o = 0; o < externals_.size(); ++o) {
    const External &external = externals_[o];
    DType type = external.value->dtype();
    llvm::Value *buffer = k_.buffer(external.slot);
    if (external.layout.inner == InnerAccess::Contiguous) {
      llvm::Value *index = b.CreateAdd(bases[o], j);
      values[external.value] =
          width_ == 1 ? k_.loadElement(type, buffer, index) : loadVector(type, buffer, index, mask);
    } else if (external.layout.inner == InnerAccess::Strided) {
      llvm::Value *index = b.CreateAdd(bases[o], b.CreateMul(j, strides_[o].back()));
      values[external.value] = k_.loadElement(type, buffer, index);
    }
  }
  for (const Node *node : group_.nodes) {
    std::vector<llvm::Value *> operands;
    for (size_t i = 0; i < node->numOperands(); ++i) {
      const onnxc::Value *operand = node->operand(i);
      bool unread = !operand || (node->kind() == OpKind::CastLike && i == 1);
      operands.push_back(unread ? nullptr : values.at(operand));
    }
    llvm::Value *result = emitter.emit(*node, operands);
    DType type = node->result(0)->dtype();
    if ((type == DType::F16 || type == DType::BF16) && node != group_.nodes.back())
      result = roundToStorage(type, result);
    values[node->result(0)] = result;
  }
  // Integer Div/Mod by zero: one branch per chunk, on the lanes in range.
  llvm::Value *anyZero = nullptr;
  for (const ElementEmitter::DivisorCheck &check : emitter.takeDivisorChecks())
    anyZero = anyZero ? b.CreateOr(anyZero, check.isZero) : check.isZero;
  if (anyZero) {
    if (mask)
      anyZero = b.CreateAnd(anyZero, mask);
    k_.failIf(width_ == 1 ? anyZero : b.CreateOrReduce(anyZero));
  }
  const onnxc::Value *result = group_.result();
  llvm::Value *index = b.CreateAdd(rowStart, j);
  if (width_ == 1)
    k_.storeElement(result->dtype(), values.at(result), k_.buffer(outputSlot_), index);
  else
    storeVector(result->dtype(), values.at(result), k_.buffer(outputSlot_), index, mask);
}

void GroupKernel::emitSegment(llvm::Value *jBegin, llvm::Value *jEnd, llvm::Value *rowStart,
                              const std::vector<llvm::Value *> &bases) {
  IRBuilder<> &b = k_.ir();
  ElementEmitter emitter(k_, width_);
  // Operands constant along the row: one load per row (or per call).
  std::map<const onnxc::Value *, llvm::Value *> rowValues = invariantValues_;
  for (size_t o = 0; o < externals_.size(); ++o) {
    const External &external = externals_[o];
    if (external.layout.inner == InnerAccess::Splat && !external.invariant)
      rowValues[external.value] = emitter.splat(
          k_.loadElement(external.value->dtype(), k_.buffer(external.slot), bases[o]));
  }
  if (width_ == 1) {
    k_.forRange(jBegin, jEnd,
                [&](llvm::Value *j) { emitChunk(j, nullptr, rowStart, bases, rowValues); });
    return;
  }
  llvm::Value *count = b.CreateSub(jEnd, jBegin);
  llvm::Value *vectorEnd = b.CreateAdd(jBegin, b.CreateAnd(count, k_.i64(-int64_t(width_))));
  k_.forRange(
      jBegin, vectorEnd, [&](llvm::Value *j) { emitChunk(j, nullptr, rowStart, bases, rowValues); },
      width_, "j");
  k_.ifThen(b.CreateICmpSLT(vectorEnd, jEnd), [&] {
    SmallVector<Constant *, kVectorWidth> lanes;
    for (unsigned lane = 0; lane < width_; ++lane)
      lanes.push_back(b.getInt64(lane));
    llvm::Value *laneIndex =
        b.CreateAdd(b.CreateVectorSplat(width_, vectorEnd), ConstantVector::get(lanes));
    llvm::Value *mask = b.CreateICmpSLT(laneIndex, b.CreateVectorSplat(width_, jEnd));
    emitChunk(vectorEnd, mask, rowStart, bases, rowValues);
  });
}

void GroupKernel::emit() {
  // The step's name may list a whole chain: the message names the Div/Mod.
  std::string failure;
  for (const Node *node : group_.nodes)
    if ((node->kind() == OpKind::Div || node->kind() == OpKind::Mod) &&
        !isFloat(node->operand(0)->dtype()))
      failure += (failure.empty() ? "" : "; or ") + divisionByZeroMessage(*node);
  if (!failure.empty())
    step_.setFailure(failure);
  collectOperands();
  width_ = chooseWidth();
  bool expensive = false;
  for (const Node *node : group_.nodes)
    expensive = expensive || isExpensiveElementwiseOp(*node);
  Shape resultShape = group_.result()->shape();
  auto total = [resultShape](FunctionBuilder &f) { return f.numElements(resultShape); };
  auto [begin, end] = step_.splitEvenly(total, expensive ? kExpensiveGrain : kGrain);

  for (const External &external : externals_) {
    std::vector<llvm::Value *> strides;
    for (const LayoutStride &s : external.layout.strides)
      strides.push_back(stride(s));
    strides_.push_back(strides);
  }
  ElementEmitter emitter(k_, width_);
  for (const External &external : externals_)
    if (external.invariant)
      invariantValues_[external.value] = emitter.splat(
          k_.loadElement(external.value->dtype(), k_.buffer(external.slot), k_.i64(0)));

  size_t outerAxes = extents_.size() - 1;
  if (outerAxes == 0) {
    std::vector<llvm::Value *> bases(externals_.size(), k_.i64(0));
    emitSegment(begin, end, k_.i64(0), bases);
    step_.finish();
    return;
  }
  IRBuilder<> &b = k_.ir();
  llvm::Value *rowLength = k_.dim(extents_.back());
  std::vector<llvm::Value *> outerExtents;
  for (size_t a = 0; a < outerAxes; ++a)
    outerExtents.push_back(k_.dim(extents_[a]));
  llvm::Value *firstRow = b.CreateUDiv(begin, rowLength);
  llvm::Value *lastRow = k_.ceilDiv(end, rowLength);
  k_.forRange(
      firstRow, lastRow,
      [&](llvm::Value *row) {
        llvm::Value *rowStart = b.CreateMul(row, rowLength);
        llvm::Value *jBegin = k_.max(b.CreateSub(begin, rowStart), k_.i64(0));
        llvm::Value *jEnd = k_.min(b.CreateSub(end, rowStart), rowLength);
        std::vector<llvm::Value *> index =
            outerAxes == 1 ? std::vector<llvm::Value *>{row} : k_.unflatten(row, outerExtents);
        std::vector<llvm::Value *> bases;
        for (size_t o = 0; o < externals_.size(); ++o)
          bases.push_back(k_.offset(index, ArrayRef<llvm::Value *>(strides_[o]).drop_back()));
        emitSegment(jBegin, jEnd, rowStart, bases);
      },
      1, "row");
  step_.finish();
}

void lowerElementwise(LoweringContext &context, const Node &node) {
  if (std::string reason = elementwiseUnsupportedReason(node); !reason.empty())
    context.unsupported(node, reason);
  ElementwiseGroup group = formElementwiseGroup(context, node);
  GroupKernel(context, group).emit();
}

} // namespace

void registerElementwiseLowerings(LoweringTable &table) {
  for (OpKind kind : {OpKind::Add,         OpKind::Sub,
                      OpKind::Mul,         OpKind::Div,
                      OpKind::Pow,         OpKind::Mod,
                      OpKind::Max,         OpKind::Min,
                      OpKind::Sum,         OpKind::Mean,
                      OpKind::Sqrt,        OpKind::Reciprocal,
                      OpKind::Neg,         OpKind::Abs,
                      OpKind::Sign,        OpKind::Floor,
                      OpKind::Ceil,        OpKind::Exp,
                      OpKind::Log,         OpKind::Erf,
                      OpKind::Tanh,        OpKind::Sigmoid,
                      OpKind::Relu,        OpKind::LeakyRelu,
                      OpKind::Gelu,        OpKind::Sin,
                      OpKind::Cos,         OpKind::Clip,
                      OpKind::Where,       OpKind::Equal,
                      OpKind::Less,        OpKind::Greater,
                      OpKind::LessOrEqual, OpKind::GreaterOrEqual,
                      OpKind::Not,         OpKind::And,
                      OpKind::Or,          OpKind::Xor,
                      OpKind::IsNaN,       OpKind::IsInf,
                      OpKind::Cast,        OpKind::CastLike,
                      OpKind::Elu})
    table.add(kind, lowerElementwise);
}

} // namespace onnxc::lower
