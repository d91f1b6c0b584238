//===- passes/cleanup/ReshapeTarget.h - Constant Reshape targets from shapes ---===//
//
// simplify-shapes and simplify-transposes both rewrite a Reshape so that it
// reads a constant target: the first when the target is computed at run time
// from Shape nodes, the second when two Reshapes merge and the outer target's
// 0 entries would copy dims from the wrong tensor. Both express the known
// result shape relative to the known input shape here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/MatchSupport.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc {

/// A Reshape target (read with allowzero = 0) that reshapes a tensor of shape
/// `input` into one of shape `output`, exactly: each entry the output dim when
/// it is a constant, 0 when it is provably the input's dim at that position,
/// and a single -1 for one remaining dim (the element counts agree, so -1
/// resolves to it). Rejected when that cannot be written: an unranked
/// shape, a constant 0 dim (0 would mean "copy"), or more than one dim that
/// is neither constant nor the input's.
match::MatchResult<std::vector<int64_t>> expressReshapeTarget(const Shape &input,
                                                              const Shape &output);

/// True when both shapes are ranked and every dim is provably equal: a
/// Reshape or Expand between them moves no data.
using match::provablySameShape;

/// Adds an i64[n] constant holding `values`, named `base` (made unique).
Value *addIndexConstant(Graph &graph, const std::string &base, const std::vector<int64_t> &values);

} // namespace onnxc
