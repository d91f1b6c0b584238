//===- ir/eval/Broadcast.h - Broadcasting, index walking, operand checks ---===//
//
// Helpers shared by the reference kernels: numpy multidirectional
// broadcasting of concrete shapes, a walker that visits the elements of an
// output shape while tracking offsets into broadcast operands, splitting a
// shape around an axis, and the ONNX data-type codes of `to`/`stash_type`
// attributes. Element types and typed dispatch come from ir/ElementTraits.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/DType.h"
#include "ir/ElementTraits.h"
#include "ir/Error.h"
#include "ir/Node.h"
#include "ir/OpAttributes.h"
#include "ir/Tensor.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnxc {

/// Numpy multidirectional broadcast of concrete shapes. Throws onnxc::Error
/// naming `node` and the shapes when two dims differ and neither is 1.
std::vector<int64_t> broadcastShapes(const Node &node,
                                     const std::vector<std::vector<int64_t>> &shapes);

/// Whether `dims` can be broadcast to `target` (numpy rules, one direction).
bool isBroadcastableTo(const std::vector<int64_t> &dims, const std::vector<int64_t> &target);

/// Row-major element strides of a shape.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &dims);

/// Strides (one per dim of `target`) that read a tensor of shape `dims`
/// broadcast to `target`: right-aligned, 0 on broadcast axes.
/// Requires isBroadcastableTo(dims, target).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &dims,
                                      const std::vector<int64_t> &target);

/// "[2, 3]" for diagnostics.
std::string dimsString(const std::vector<int64_t> &dims);

/// Visits the elements of `outDims` in row-major order and keeps, for each
/// operand, the flat offset of the element broadcast to the current position.
/// Also serves reductions: walk the input shape with the keepdims output as
/// the "operand" and offset(0) is the accumulator slot.
class BroadcastWalker {
public:
  BroadcastWalker(std::vector<int64_t> outDims,
                  const std::vector<std::vector<int64_t>> &operandDims);
  /// Flat offset into operand `i` for the current element.
  int64_t offset(size_t i) const { return offsets_[i]; }
  /// Moves to the next element (row-major).
  void next();

private:
  std::vector<int64_t> outDims_;
  std::vector<int64_t> index_;
  std::vector<std::vector<int64_t>> strides_; // per operand, one per out dim
  std::vector<int64_t> offsets_;
};

/// Calls body(outIndex, offsets) for every element of `outDims`, where
/// offsets[k] is the flat index of the element of operand k broadcast there.
template <typename Body>
void forEachBroadcast(const std::vector<int64_t> &outDims,
                      const std::vector<const Tensor *> &inputs, Body &&body) {
  int64_t count = 1;
  for (int64_t d : outDims)
    count *= d;
  if (count == 0)
    return;
  std::vector<int64_t> offsets(inputs.size(), 0);
  bool sameShapes = true;
  std::vector<std::vector<int64_t>> inputDims;
  for (const Tensor *t : inputs) {
    sameShapes = sameShapes && t->dims() == outDims;
    inputDims.push_back(t->dims());
  }
  if (sameShapes) {
    for (int64_t i = 0; i < count; ++i) {
      std::fill(offsets.begin(), offsets.end(), i);
      body(i, offsets.data());
    }
    return;
  }
  BroadcastWalker walker(outDims, inputDims);
  for (int64_t i = 0; i < count; ++i, walker.next()) {
    for (size_t k = 0; k < offsets.size(); ++k)
      offsets[k] = walker.offset(k);
    body(i, offsets.data());
  }
}

/// Result dims of broadcasting all the tensors (numpy rules); throws naming the node.
std::vector<int64_t> broadcastOperands(const Node &node, const std::vector<const Tensor *> &ins);

/// A shape seen as [outer, axis, inner]: the products of the dims before
/// the axis, the axis dim itself, and the dims after it.
struct AxisSplit {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};
AxisSplit splitAtAxis(const std::vector<int64_t> &dims, int64_t axis);

/// Classes of dtypes, as bit sets, for kernels' operand type checks.
inline constexpr unsigned kFloatTypes = 1, kSignedTypes = 2, kUnsignedTypes = 4, kBoolType = 8;
inline constexpr unsigned kIntTypes = kSignedTypes | kUnsignedTypes;
inline constexpr unsigned kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr unsigned kAllTypes = kNumericTypes | kBoolType;
/// i4/u4: in no class above, so only kernels that ask for them (data
/// movement, Cast, the quantization ops) take them.
inline constexpr unsigned kFourBitTypes = 16;

constexpr unsigned dtypeClass(DType d) {
  switch (d) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
    return kFloatTypes;
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
    return kSignedTypes;
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return kUnsignedTypes;
  case DType::Bool:
    return kBoolType;
  case DType::I4:
  case DType::U4:
    return kFourBitTypes;
  case DType::Unknown:
    return 0;
  }
  return 0;
}
/// Whether `d` belongs to the set `types` (usable in `if constexpr`).
constexpr bool dtypeIn(DType d, unsigned types) { return (dtypeClass(d) & types) != 0; }

/// Operand i, or an error naming the node when it is absent.
const Tensor &requireOperand(const Node &node, const std::vector<const Tensor *> &operands,
                             size_t i);
/// Throws naming the node and operand when `t`'s dtype is not in `types`.
void requireDType(const Node &node, const Tensor &t, unsigned types, size_t operandIndex);

/// DType of an ONNX TensorProto data-type code (1 = f32, 7 = i64, ...);
/// nullopt for codes onnxc does not support. Kept here because ir must not
/// depend on the frontend.
std::optional<DType> dtypeFromOnnxCode(int64_t code);

/// Throws naming the node unless BitCast may read `from` bytes as `to`: the
/// same element size, not a 4-bit type (onnxc holds one per byte), and bool
/// only from bool (a byte other than 0 or 1 is no bool). Unknown passes.
void checkBitCast(const Node &node, DType from, DType to);

/// Converts between compute types. Float to integer truncates toward zero;
/// NaN becomes 0 and out-of-range values saturate (ONNX leaves both
/// undefined, C++ makes them undefined behaviour; this is deterministic).
template <typename To, typename From> To convertNumber(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v))
      return To(0);
    if (v <= From(std::numeric_limits<To>::lowest()))
      return std::numeric_limits<To>::lowest();
    if (v >= From(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    return To(v);
  } else {
    return To(v);
  }
}

} // namespace onnxc
