//===- runtime/MemoryLimit.h - The most a run may allocate ----------------===//
//
// A compiled model sizes its arena and outputs from the input shapes, so a
// hostile input (or a model asking for [2^31, 2^31]) could make a run
// allocate without bound; Linux would grant the address space and kill the
// process on first touch. Every run checks its plan against a limit first.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace onnxc::runtime {

/// $ONNXC_MEMORY_LIMIT (bytes, or with a K/M/G/T binary suffix), else the
/// machine's physical memory. Read once per process.
int64_t defaultMemoryLimit();

/// Why $ONNXC_MEMORY_LIMIT cannot be used (it is set but not a positive
/// size), or empty. Sessions refuse to open then: ignoring it would run
/// without the only bound a compiled library has.
const std::string &memoryLimitError();

} // namespace onnxc::runtime
