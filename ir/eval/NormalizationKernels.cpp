// STUB: kernels to be written.
#include "ir/eval/Kernels.h"
namespace onnxc {
void registerNormalizationKernels(KernelTable &) {}
} // namespace onnxc
