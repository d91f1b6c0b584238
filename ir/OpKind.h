//===- ir/OpKind.h - The kinds of IR ops, generated from Ops.def ------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace onnxc {

enum class OpKind : unsigned short {
#define OP(Name, minOps, maxOps, minRes, maxRes) Name,
#include "ir/Ops.def"
#undef OP
};

/// Number of op kinds in the table.
constexpr unsigned kNumOpKinds = 0
#define OP(Name, minOps, maxOps, minRes, maxRes) +1
#include "ir/Ops.def"
#undef OP
    ;

/// What the op table says about one op.
struct OpInfo {
  std::string_view name;
  int minOperands, maxOperands; // -1: unbounded
  int minResults, maxResults;   // -1: unbounded
};

const OpInfo &opInfo(OpKind kind);
inline std::string_view opName(OpKind kind) { return opInfo(kind).name; }
/// A count range of the op table in words, for diagnostics: "2", "1 to 3",
/// or "at least 1" when `max` is -1 (unbounded).
std::string describeCountRange(int min, int max);
/// Looks an op up by its text-IR name; nullopt if there is no such op.
std::optional<OpKind> parseOpKind(std::string_view name);

} // namespace onnxc
