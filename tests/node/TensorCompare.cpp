//===- tests/node/TensorCompare.cpp - Expected-vs-actual tensor checks -----===//

#include "tests/node/TensorCompare.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace onnxc::nodetest {
namespace {

std::string dimsString(const std::vector<int64_t> &dims) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i)
    os << (i ? ", " : "") << dims[i];
  os << ']';
  return os.str();
}

/// Row-major multi-index of flat element `flat`, so a mismatch report points
/// at a position a person can find in the expected output.
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 0)
      break;
    index[i] = flat % dims[i];
    flat /= dims[i];
  }
  return index;
}

bool floatsAgree(double actual, double expected, const Tolerance &tolerance) {
  if (std::isnan(expected) || std::isnan(actual))
    return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual))
    return actual == expected;
  return std::fabs(actual - expected) <=
         tolerance.absolute + tolerance.relative * std::fabs(expected);
}

} // namespace

std::optional<std::string> compareTensors(const Tensor &actual, const Tensor &expected,
                                          const Tolerance &tolerance) {
  if (actual.dtype() != expected.dtype())
    return "dtype " + actual.typeString() + ", expected " + expected.typeString();
  if (actual.dims() != expected.dims())
    return "shape " + actual.typeString() + ", expected " + expected.typeString();
  if (!actual.hasData())
    return "result has no data";
  bool floating = isFloat(expected.dtype());
  int64_t numElements = expected.numElements();
  int64_t numDiffering = 0;
  int64_t firstDiffering = -1;
  double maxAbsDiff = 0;
  for (int64_t i = 0; i < numElements; ++i) {
    bool agree;
    if (floating) {
      double a = actual.elementAsDouble(i), e = expected.elementAsDouble(i);
      agree = floatsAgree(a, e, tolerance);
      if (!agree && std::isfinite(a) && std::isfinite(e))
        maxAbsDiff = std::max(maxAbsDiff, std::fabs(a - e));
    } else {
      agree = actual.elementAsInt64(i) == expected.elementAsInt64(i);
    }
    if (agree)
      continue;
    if (numDiffering++ == 0)
      firstDiffering = i;
  }
  if (numDiffering == 0)
    return std::nullopt;

  std::ostringstream os;
  os.precision(9);
  os << numDiffering << " of " << numElements << " elements differ; first at "
     << dimsString(unflatten(firstDiffering, expected.dims())) << ": got ";
  if (floating)
    os << actual.elementAsDouble(firstDiffering) << ", expected "
       << expected.elementAsDouble(firstDiffering) << " (max abs diff " << maxAbsDiff << ")";
  else
    os << actual.elementAsInt64(firstDiffering) << ", expected "
       << expected.elementAsInt64(firstDiffering);
  return os.str();
}

} // namespace onnxc::nodetest
