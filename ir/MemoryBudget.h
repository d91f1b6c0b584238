//===- ir/MemoryBudget.h - The most tensor memory onnxc may hold ----------===//
//
// A model file can ask for any amount of memory: a 60-byte sparse
// initializer declaring 2^31 elements, a Tile by 2^40, a ConstantOfShape of
// [2^31, 2^31]. Every Tensor's storage (weights, folded constants, the
// reference evaluator's values) is counted against one process-wide budget,
// checked before the allocation, so such a model gets an error naming what
// asked instead of an OOM kill. The compiled runtime has its own limit per
// session (onnxc_session_set_memory_limit); `onnxc --memory-limit` sets both.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace onnxc {

/// The budget in bytes: set by setMemoryLimit, else $ONNXC_MEMORY_LIMIT,
/// else the machine's physical memory.
int64_t memoryLimit();
/// Sets the budget; 0 restores the default.
void setMemoryLimit(int64_t bytes);
/// Bytes of tensor storage alive now.
int64_t tensorBytesInUse();

/// Counts `bytes` against the budget, or throws SizeError saying what is
/// asked, what is in use and the limit. Pair with releaseTensorBytes.
void reserveTensorBytes(int64_t bytes);
void releaseTensorBytes(int64_t bytes);
/// Throws the same SizeError as reserveTensorBytes when `bytes` would not
/// fit now, without reserving: for data read before its Tensor exists.
void checkTensorBytesAvailable(int64_t bytes);

/// "4096", "512K", "8M", "16G", "1T" (binary units, optional trailing B or
/// iB); nullopt for anything else or a value beyond int64.
std::optional<int64_t> parseByteSize(const std::string &text);
/// "8.0 GiB", "512 B": for messages.
std::string formatBytes(int64_t bytes);

} // namespace onnxc
