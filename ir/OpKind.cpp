//===- ir/OpKind.cpp - The op table ------------------------------------------===//
#include "ir/OpKind.h"

#include <array>

namespace onnxc {

namespace {
constexpr std::array<OpInfo, kNumOpKinds> kOpTable = {{
#define OP(Name, minOps, maxOps, minRes, maxRes) {#Name, minOps, maxOps, minRes, maxRes},
#include "ir/Ops.def"
#undef OP
}};
} // namespace

const OpInfo &opInfo(OpKind kind) { return kOpTable[unsigned(kind)]; }

std::string describeCountRange(int min, int max) {
  if (max < 0)
    return "at least " + std::to_string(min);
  if (min == max)
    return std::to_string(min);
  return std::to_string(min) + " to " + std::to_string(max);
}

std::optional<OpKind> parseOpKind(std::string_view name) {
  for (unsigned i = 0; i < kNumOpKinds; ++i)
    if (kOpTable[i].name == name)
      return OpKind(i);
  return std::nullopt;
}

} // namespace onnxc
