//===- tests/unit/GeneratorHandle.h - An owning handle of a C API generator -===//
#pragma once

#include "onnxc/onnxc_generate.h"

#include <memory>

namespace onnxc::runtime::testing {

struct GeneratorDeleter {
  void operator()(onnxc_generator *generator) const { onnxc_generator_destroy(generator); }
};
/// Destroys the generator (onnxc_generator_destroy) when it goes.
using GeneratorPtr = std::unique_ptr<onnxc_generator, GeneratorDeleter>;

} // namespace onnxc::runtime::testing
