// STUB: replaced by the frontend implementation.
#include "frontend/TensorProto.h"
#include "ir/Error.h"
namespace onnxc {
DType dtypeFromOnnx(int32_t, const std::string &context) { fail(context, ": not implemented"); }
Tensor tensorFromProto(const onnx::TensorProto &, const std::string &, const std::string &context) { fail(context, ": not implemented"); }
} // namespace onnxc
