//===- ir/OpAttributes.cpp - Attribute checks shared by rules and kernels -===//
#include "ir/OpAttributes.h"

#include "ir/Error.h"
#include "ir/shape/Shape.h"

#include <cctype>

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

namespace {

struct RecurrentActivationInfo {
  const char *name; // lowercase
  RecurrentActivationKind kind;
  int parameters; // how many of (alpha, beta) it takes
  double defaultAlpha, defaultBeta;
};

constexpr RecurrentActivationInfo kRecurrentActivations[] = {
    {"relu", RecurrentActivationKind::Relu, 0, 0, 0},
    {"tanh", RecurrentActivationKind::Tanh, 0, 0, 0},
    {"sigmoid", RecurrentActivationKind::Sigmoid, 0, 0, 0},
    {"affine", RecurrentActivationKind::Affine, 2, 1.0, 0.0},
    {"leakyrelu", RecurrentActivationKind::LeakyRelu, 1, 0.01, 0},
    {"thresholdedrelu", RecurrentActivationKind::ThresholdedRelu, 1, 1.0, 0},
    {"scaledtanh", RecurrentActivationKind::ScaledTanh, 2, 1.0, 1.0},
    {"hardsigmoid", RecurrentActivationKind::HardSigmoid, 2, 0.2, 0.5},
    {"elu", RecurrentActivationKind::Elu, 1, 1.0, 0},
    {"softsign", RecurrentActivationKind::Softsign, 0, 0, 0},
    {"softplus", RecurrentActivationKind::Softplus, 0, 0, 0},
};

} // namespace

std::vector<RecurrentActivation> recurrentActivations(const Node &node, size_t perDirection,
                                                      int64_t directions,
                                                      const std::vector<std::string> &defaults) {
  std::vector<std::string> names = defaults;
  if (const Attribute *attr = node.findAttr("activations")) {
    if (attr->kind() != Attribute::Kind::Strings)
      fail(node.describe(), ": attribute 'activations' must be a list of strings");
    names = attr->asStrings();
  }
  if (names.size() == perDirection && directions == 2) {
    std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != perDirection * size_t(directions))
    fail(node.describe(), ": expected ", perDirection * size_t(directions), " activations, got ",
         names.size());
  std::vector<float> alphas = node.getFloats("activation_alpha");
  std::vector<float> betas = node.getFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  std::vector<RecurrentActivation> out;
  for (const std::string &name : names) {
    std::string lower;
    for (char c : name)
      lower += char(std::tolower(static_cast<unsigned char>(c)));
    const RecurrentActivationInfo *info = nullptr;
    for (const RecurrentActivationInfo &candidate : kRecurrentActivations)
      if (lower == candidate.name)
        info = &candidate;
    if (!info)
      fail(node.describe(), ": unsupported activation '", name, "'");
    RecurrentActivation activation{info->kind, info->defaultAlpha, info->defaultBeta};
    if (info->parameters >= 1 && nextAlpha < alphas.size())
      activation.alpha = alphas[nextAlpha++];
    if (info->parameters >= 2 && nextBeta < betas.size())
      activation.beta = betas[nextBeta++];
    out.push_back(activation);
  }
  return out;
}

} // namespace onnxc
