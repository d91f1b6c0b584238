//===- driver/CompiledSession.cpp - Run a compiled model on ir::Tensors ----===//

#include "driver/CompiledSession.h"

#include "ir/Error.h"
#include "ir/MemoryBudget.h"
#include "onnxc/onnxc.h"

#include <cstring>
#include <string>

namespace onnxc {

// ir::DType and onnxc_dtype number the element types alike (F32 = 1 ...
// Bool = 13); the runtime checks input dtypes against the descriptor.
static_assert(int(DType::F32) == ONNXC_F32 && int(DType::Bool) == ONNXC_BOOL &&
              int(DType::I64) == ONNXC_I64 && int(DType::BF16) == ONNXC_BF16);

CompiledSession::CompiledSession(const onnxc_model_descriptor *model, int numThreads)
    : model_(model), session_(onnxc_session_create(model, numThreads)) {
  if (!session_)
    fail("cannot create a session: ", onnxc_last_error());
  // One budget for the whole tool: what --memory-limit set for tensors.
  onnxc_session_set_memory_limit(session_, size_t(memoryLimit()));
}

CompiledSession::~CompiledSession() { onnxc_session_destroy(session_); }

std::vector<Tensor> CompiledSession::run(const std::vector<const Tensor *> &inputs) {
  std::vector<onnxc_tensor> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i])
      fail("input ",
           i < size_t(model_->num_inputs) ? "'" + std::string(model_->inputs[i].name) + "'"
                                          : std::to_string(i),
           " is not given (a null tensor)");
    const Tensor &t = *inputs[i];
    if (t.rank() > ONNXC_MAX_RANK)
      fail("input ", i, " has rank ", t.rank(), ", more than the runtime's ", ONNXC_MAX_RANK);
    in[i].data = const_cast<void *>(t.rawData());
    in[i].dtype = int32_t(t.dtype());
    in[i].rank = int32_t(t.rank());
    for (size_t d = 0; d < t.rank(); ++d)
      in[i].dims[d] = t.dims()[d];
    in[i].size_bytes = t.byteSize();
  }
  std::vector<onnxc_tensor> out(size_t(model_->num_outputs));
  for (onnxc_tensor &o : out)
    std::memset(&o, 0, sizeof o);
  if (onnxc_session_run(session_, in.data(), int32_t(in.size()), out.data(), int32_t(out.size())))
    fail(onnxc_session_error(session_));
  std::vector<Tensor> results;
  for (const onnxc_tensor &o : out) {
    std::vector<int64_t> dims(o.dims, o.dims + o.rank);
    results.push_back(Tensor::fromBytes(DType(o.dtype), dims, o.data, o.size_bytes));
  }
  return results;
}

size_t CompiledSession::arenaBytes() const { return onnxc_session_arena_bytes(session_); }

void CompiledSession::setProfiling(bool enabled) { onnxc_session_set_profiling(session_, enabled); }

int64_t CompiledSession::stepNanoseconds(int32_t step) const {
  return onnxc_session_step_nanoseconds(session_, step);
}

} // namespace onnxc
