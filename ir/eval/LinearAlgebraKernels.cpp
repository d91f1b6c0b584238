// STUB: kernels to be written.
#include "ir/eval/Kernels.h"
namespace onnxc {
void registerLinearAlgebraKernels(KernelTable &) {}
} // namespace onnxc
