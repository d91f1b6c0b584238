// STUB: kernels to be written.
#include "ir/eval/Kernels.h"
namespace onnxc {
void registerConvolutionKernels(KernelTable &) {}
} // namespace onnxc
