// STUB: kernels to be written.
#include "ir/eval/Kernels.h"
namespace onnxc {
void registerMovementKernels(KernelTable &) {}
} // namespace onnxc
