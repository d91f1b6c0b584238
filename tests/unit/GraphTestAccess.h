//===- tests/unit/GraphTestAccess.h - Breaking IR bookkeeping on purpose --===//
//
// The Graph API keeps use lists, result indices and value names consistent,
// so the verifier's checks of them cannot be reached through it. This
// friend of Value (see ir/Value.h) writes those fields directly. Only the
// verifier tests use it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Value.h"

#include <string>
#include <vector>

namespace onnxc {

struct GraphTestAccess {
  /// The use list of `value`, to add or drop uses behind the graph's back.
  static std::vector<Use> &uses(Value &value) { return value.uses_; }
  /// Makes `value` claim another result index than the one it has.
  static void setResultIndex(Value &value, unsigned index) { value.resultIndex_ = index; }
  /// Makes `value` claim another defining node than the one it has.
  static void setDefiningNode(Value &value, Node *node) { value.definingNode_ = node; }
  /// Renames `value` without updating the graph's name table.
  static void setName(Value &value, std::string name) { value.name_ = std::move(name); }
};

} // namespace onnxc
