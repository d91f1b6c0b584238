//===- tests/node/TensorCompare.h - Expected-vs-actual tensor checks -------===//
//
// The ONNX backend tests compare outputs with numpy's assert_allclose at
// rtol 1e-3 / atol 1e-7; the node-test runner uses the same rule so that a
// pass here means what a pass means in onnxruntime's backend-test run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Tensor.h"

#include <optional>
#include <string>

namespace onnxc::nodetest {

struct Tolerance {
  double relative = 1e-3;
  double absolute = 1e-7;
};

/// Compares `actual` with `expected`: dtype and dims must be identical;
/// floating-point values must satisfy |a - e| <= atol + rtol * |e| (NaN
/// matches NaN, infinities must match exactly); integers and bools must be
/// equal. Returns nullopt when they agree, else a one-line description of the
/// first difference and how many elements differ.
std::optional<std::string> compareTensors(const Tensor &actual, const Tensor &expected,
                                          const Tolerance &tolerance = {});

} // namespace onnxc::nodetest
