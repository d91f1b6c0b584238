//===- ir/eval/CastKernels.cpp - Cast, CastLike and BitCast reference kernels ===//
//
// Cast converts each element (ElementTraits' conversions: round to nearest
// even into f16/bf16, integers wrapped to the narrower type, i4/u4 keeping
// the low 4 bits); CastLike takes its target from its second operand;
// BitCast reads the operand's bytes as another type of the same size.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <cstring>

namespace onnxc {

namespace {

template <DType D> using StorageOf = typename ElementTraits<D>::Storage;

Tensor castTensor(const Tensor &x, DType target) {
  if (x.dtype() == target)
    return x.clone(); // bit-exact, NaN payloads included
  return dispatchDType(x.dtype(), [&]<DType S>() {
    return dispatchDType(target, [&]<DType D>() {
      using TS = ElementTraits<S>;
      using TD = ElementTraits<D>;
      Tensor out(D, x.dims());
      const StorageOf<S> *src = x.data<StorageOf<S>>();
      StorageOf<D> *dst = out.data<StorageOf<D>>();
      for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
        if constexpr (D == DType::I4 || D == DType::U4)
          // ONNX keeps the low 4 bits of the integer (-9 is 7 as u4), so
          // convert through i32 and let the store wrap.
          dst[i] = TD::store(typename TD::Compute(convertNumber<int32_t>(TS::load(src[i]))));
        else
          dst[i] = TD::store(convertNumber<typename TD::Compute>(TS::load(src[i])));
      }
      return out;
    });
  });
}

/// The type a Cast or BitCast node's `to` attribute names.
DType targetOf(const Node &node) {
  int64_t code = node.requireInt("to");
  std::optional<DType> target = dtypeFromOnnxCode(code);
  if (!target)
    fail(node.describe(), ": ", node.opName(), " to ONNX data type ", code, " is not supported");
  return *target;
}

void castKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  results[0] = castTensor(requireOperand(node, operands, 0), targetOf(node));
}

/// The operand's bytes, read as `to` (checkBitCast says which pairs).
void bitCastKernel(const Node &node, const std::vector<const Tensor *> &operands,
                   std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  DType target = targetOf(node);
  checkBitCast(node, x.dtype(), target);
  Tensor out(target, x.dims());
  std::memcpy(out.rawData(), x.rawData(), size_t(x.numElements()) * dtypeSize(x.dtype()));
  results[0] = std::move(out);
}

void castLikeKernel(const Node &node, const std::vector<const Tensor *> &operands,
                    std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  results[0] = castTensor(x, requireOperand(node, operands, 1).dtype());
}

} // namespace

void registerCastKernels(KernelTable &table) {
  table.add(OpKind::Cast, castKernel);
  table.add(OpKind::CastLike, castLikeKernel);
  table.add(OpKind::BitCast, bitCastKernel);
}

} // namespace onnxc
