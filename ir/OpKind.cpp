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

std::optional<OpKind> parseOpKind(std::string_view name) {
  for (unsigned i = 0; i < kNumOpKinds; ++i)
    if (kOpTable[i].name == name)
      return OpKind(i);
  return std::nullopt;
}

} // namespace onnxc
