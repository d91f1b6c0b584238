//===- ir/IndexTables.cpp - Which tables an integer value indexes -----------===//
#include "ir/IndexTables.h"

#include "ir/Node.h"

#include <algorithm>
#include <set>

namespace onnxc {

namespace {

/// Ops that move index values around without changing them.
bool passesIndicesThrough(OpKind kind) {
  switch (kind) {
  case OpKind::Cast:
  case OpKind::Identity:
  case OpKind::Unsqueeze:
  case OpKind::Squeeze:
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Expand:
    return true;
  default:
    return false;
  }
}

void collect(const Value &value, std::set<const Value *> &seen, std::vector<Dim> &dims) {
  if (!seen.insert(&value).second)
    return;
  for (const Use &use : value.uses()) {
    const Node &user = *use.user;
    if (use.operandIndex == 0 && passesIndicesThrough(user.kind())) {
      for (const Value *result : user.results())
        if (result)
          collect(*result, seen, dims);
      continue;
    }
    bool gathers = user.kind() == OpKind::Gather || user.kind() == OpKind::GatherElements;
    if (!gathers || use.operandIndex != 1)
      continue;
    const Value *data = user.operand(0);
    if (!data || !data->shape().isRanked())
      continue;
    std::optional<int64_t> axis =
        normalizeAxis(user.getInt("axis", 0), int64_t(data->shape().rank()));
    if (axis)
      dims.push_back(data->shape()[size_t(*axis)]);
  }
}

} // namespace

std::vector<Dim> indexedTableDims(const Value &value) {
  std::set<const Value *> seen;
  std::vector<Dim> dims;
  collect(value, seen, dims);
  return dims;
}

int64_t constantIndexBound(const Value &value) {
  int64_t bound = 0;
  for (const Dim &dim : indexedTableDims(value))
    if (std::optional<int64_t> rows = dim.constant(); rows && *rows > 0)
      bound = bound ? std::min(bound, *rows) : *rows;
  return bound;
}

} // namespace onnxc
