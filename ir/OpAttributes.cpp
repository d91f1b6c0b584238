//===- ir/OpAttributes.cpp - Attribute checks shared by rules and kernels -===//
#include "ir/OpAttributes.h"

#include "ir/Error.h"
#include "ir/Shape.h"

namespace onnxc {

int64_t normalizeAxisOrFail(const Node &node, int64_t axis, int64_t rank, const char *what) {
  std::optional<int64_t> normalized = normalizeAxis(axis, rank);
  if (!normalized)
    fail(node.describe(), ": ", what, " ", axis, " is out of range for rank ", rank);
  return *normalized;
}

std::vector<int64_t> transposePermutation(const Node &node, size_t rank) {
  std::vector<int64_t> perm = node.getInts("perm");
  if (!node.hasAttr("perm"))
    for (size_t i = 0; i < rank; ++i)
      perm.push_back(int64_t(rank - 1 - i));
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && perm[i] < int64_t(rank) && !seen[size_t(perm[i])];
    if (valid)
      seen[size_t(perm[i])] = true;
  }
  if (!valid)
    fail(node.describe(), ": perm ", Shape::fromConstants(perm).str(),
         " is not a permutation of the ", rank, " axes");
  return perm;
}

int64_t flattenAxis(const Node &node, int64_t rank) {
  int64_t axis = node.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    fail(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

void checkSplitNumOutputs(const Node &node, size_t parts) {
  if (node.hasAttr("num_outputs") && node.getInt("num_outputs", 0) != int64_t(parts))
    fail(node.describe(), ": num_outputs is ", node.getInt("num_outputs", 0), " but the node has ",
         parts, " results");
}

std::vector<int64_t> convSpatialAttr(const Node &node, const char *name, size_t count,
                                     int64_t defaultValue, int64_t minimum) {
  std::vector<int64_t> values = node.getInts(name, std::vector<int64_t>(count, defaultValue));
  if (values.size() != count)
    fail(node.describe(), ": attribute '", name, "' has ", values.size(), " values, expected ",
         count);
  for (int64_t v : values)
    if (v < minimum)
      fail(node.describe(), ": attribute '", name, "' has invalid value ", v);
  return values;
}

ConvPadding convPadding(const Node &node, size_t spatialDims) {
  ConvPadding padding{node.getString("auto_pad", "NOTSET"),
                      std::vector<int64_t>(2 * spatialDims, 0)};
  if (padding.autoPad == "NOTSET")
    padding.pads = convSpatialAttr(node, "pads", 2 * spatialDims, 0, 0);
  else if (padding.autoPad != "VALID" && !padding.isSame())
    fail(node.describe(), ": unknown auto_pad '", padding.autoPad, "'");
  return padding;
}

} // namespace onnxc
