//===- ir/IndexTables.h - Which tables an integer value indexes -------------===//
//
// Tools that make up inputs (`onnxc bench`, `onnxc run --shape`, the
// compiled descriptor's input_index_bounds) must draw an index within the
// table it picks rows of: BERT's token_type_ids index a table of 2 rows, and
// a 3 there fails the run. Exporters rarely feed the input straight to the
// Gather; a Cast, an Unsqueeze or a Reshape sits between, so this follows
// those.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Value.h"

#include <cstdint>
#include <vector>

namespace onnxc {

/// The sizes of the table axes `value` indexes: for every Gather or
/// GatherElements that takes `value` as its indices, directly or through
/// Cast, Identity, Unsqueeze, Squeeze, Reshape, Flatten or Expand, the dim of
/// the gathered axis of its data. Empty when `value` indexes nothing.
std::vector<Dim> indexedTableDims(const Value &value);

/// The smallest constant dim among indexedTableDims: valid values of
/// `value` are [0, bound). 0 when no table of constant size is indexed.
int64_t constantIndexBound(const Value &value);

} // namespace onnxc
