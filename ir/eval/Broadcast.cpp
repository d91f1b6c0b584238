//===- ir/eval/Broadcast.cpp - Broadcasting, index walking, dtype codes ---===//
#include "ir/eval/Broadcast.h"

#include "ir/shape/Shape.h"

#include <cassert>

namespace onnxc {

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

std::vector<int64_t> broadcastShapes(const Node &node,
                                     const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes) {
    size_t shift = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[shift + i];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o != 1) {
        std::string all;
        for (const auto &t : shapes)
          all += (all.empty() ? "" : " and ") + dimsString(t);
        fail(node.describe(), ": shapes ", all, " cannot be broadcast together");
      }
      o = s[i];
    }
  }
  return out;
}

std::vector<int64_t> broadcastOperands(const Node &node, const std::vector<const Tensor *> &ins) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor *t : ins)
    shapes.push_back(t->dims());
  return broadcastShapes(node, shapes);
}

bool isBroadcastableTo(const std::vector<int64_t> &dims, const std::vector<int64_t> &target) {
  if (dims.size() > target.size())
    return false;
  size_t shift = target.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && dims[i] != target[shift + i])
      return false;
  return true;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &dims,
                                      const std::vector<int64_t> &target) {
  assert(isBroadcastableTo(dims, target));
  std::vector<int64_t> own = rowMajorStrides(dims);
  std::vector<int64_t> out(target.size(), 0);
  size_t shift = target.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i)
    out[shift + i] = dims[i] == 1 ? 0 : own[i];
  return out;
}

BroadcastWalker::BroadcastWalker(std::vector<int64_t> outDims,
                                 const std::vector<std::vector<int64_t>> &operandDims)
    : outDims_(std::move(outDims)), index_(outDims_.size(), 0), offsets_(operandDims.size(), 0) {
  for (const auto &dims : operandDims)
    strides_.push_back(broadcastStrides(dims, outDims_));
}

void BroadcastWalker::next() {
  // Odometer increment: bump the innermost index, carrying outwards; each
  // carry rewinds that axis' contribution to every operand offset.
  for (size_t axis = outDims_.size(); axis-- > 0;) {
    ++index_[axis];
    for (size_t op = 0; op < offsets_.size(); ++op)
      offsets_[op] += strides_[op][axis];
    if (index_[axis] < outDims_[axis])
      return;
    for (size_t op = 0; op < offsets_.size(); ++op)
      offsets_[op] -= strides_[op][axis] * index_[axis];
    index_[axis] = 0;
  }
}

AxisSplit splitAtAxis(const std::vector<int64_t> &dims, int64_t axis) {
  assert(axis >= 0 && size_t(axis) < dims.size());
  AxisSplit split;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (int64_t(i) < axis)
      split.outer *= dims[i];
    else if (int64_t(i) > axis)
      split.inner *= dims[i];
  }
  split.size = dims[size_t(axis)];
  return split;
}

const Tensor &requireOperand(const Node &node, const std::vector<const Tensor *> &operands,
                             size_t i) {
  if (i >= operands.size() || !operands[i])
    fail(node.describe(), ": operand ", i, " is required");
  return *operands[i];
}

void requireDType(const Node &node, const Tensor &t, unsigned types, size_t operandIndex) {
  if (!dtypeIn(t.dtype(), types))
    fail(node.describe(), ": op ", node.opName(), " does not support ", dtypeName(t.dtype()),
         " (operand ", operandIndex, ")");
}

std::optional<DType> dtypeFromOnnxCode(int64_t code) {
  switch (code) {
  case 1:
    return DType::F32;
  case 2:
    return DType::U8;
  case 3:
    return DType::I8;
  case 4:
    return DType::U16;
  case 5:
    return DType::I16;
  case 6:
    return DType::I32;
  case 7:
    return DType::I64;
  case 9:
    return DType::Bool;
  case 10:
    return DType::F16;
  case 11:
    return DType::F64;
  case 12:
    return DType::U32;
  case 13:
    return DType::U64;
  case 16:
    return DType::BF16;
  case 21:
    return DType::U4;
  case 22:
    return DType::I4;
  default:
    return std::nullopt;
  }
}

void checkBitCast(const Node &node, DType from, DType to) {
  if (from == DType::Unknown)
    return;
  if (isFourBit(from) || isFourBit(to))
    fail(node.describe(), ": BitCast of ", dtypeName(from), " to ", dtypeName(to),
         " is not supported (4-bit types)");
  if (dtypeSize(from) != dtypeSize(to))
    fail(node.describe(), ": BitCast needs types of one size, but ", dtypeName(from), " has ",
         8 * dtypeSize(from), " bits and ", dtypeName(to), " has ", 8 * dtypeSize(to));
  if (to == DType::Bool && from != DType::Bool)
    fail(node.describe(), ": BitCast of ", dtypeName(from),
         " to bool is refused (a byte other than 0 or 1 is no bool)");
}

} // namespace onnxc
