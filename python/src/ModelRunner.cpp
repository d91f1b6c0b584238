//===- python/src/ModelRunner.cpp - A compiled model and its sessions ------===//
#include "python/src/ModelRunner.h"

#include "codegen/ModelJit.h"
#include "codegen/artifact/DescriptorEmitter.h"
#include "ir/Error.h"

#include <cstring>
#include <filesystem>

namespace onnxc::python {

namespace {

void checkAbi(const onnxc_model_descriptor *model, const std::string &what) {
  if (model->abi_version != ONNXC_ABI_VERSION)
    fail(what, ": model ABI version ", model->abi_version, ", this onnxc runs version ",
         ONNXC_ABI_VERSION, " (recompile the model with this onnxc)");
}

} // namespace

ModelRunner::ModelRunner(std::unique_ptr<JitModel> jit, int numThreads)
    : jit_(std::move(jit)), descriptor_(jit_->descriptor()), numThreads_(numThreads) {
  checkAbi(descriptor_, "the compiled model");
}

ModelRunner::ModelRunner(const std::string &path, int numThreads)
    : library_(std::make_unique<ModelLibrary>(path)), descriptor_(library_->descriptor()),
      numThreads_(numThreads) {
  std::error_code ec;
  libraryPath_ = std::filesystem::absolute(path, ec).string();
  if (ec)
    libraryPath_ = path;
}

ModelRunner::~ModelRunner() {
  // Sessions first: they point into the descriptor, which the JIT or the
  // library owns.
  for (onnxc_session *session : idle_)
    onnxc_session_destroy(session);
  idle_.clear();
  jit_.reset();
  library_.reset();
}

onnxc_session *ModelRunner::acquireSession() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      onnxc_session *session = idle_.back();
      idle_.pop_back();
      return session;
    }
  }
  onnxc_session *session = onnxc_session_create(descriptor_, numThreads_);
  if (!session)
    fail("cannot create a session: ", onnxc_last_error());
  return session;
}

void ModelRunner::releaseSession(onnxc_session *session) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(session);
}

std::vector<OutputBuffer> ModelRunner::run(const std::vector<onnxc_tensor> &inputs) {
  onnxc_session *session = acquireSession();
  // Returned to the pool on every path, including a copy that throws bad_alloc.
  struct Release {
    ModelRunner *runner;
    onnxc_session *session;
    ~Release() { runner->releaseSession(session); }
  } release{this, session};

  std::vector<onnxc_tensor> out(size_t(descriptor_->num_outputs));
  for (onnxc_tensor &o : out)
    std::memset(&o, 0, sizeof o);
  if (onnxc_session_run(session, inputs.data(), int32_t(inputs.size()), out.data(),
                        int32_t(out.size())) != 0)
    fail(onnxc_session_error(session));
  std::vector<OutputBuffer> results(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    OutputBuffer &r = results[i];
    r.dtype = out[i].dtype;
    r.dims.assign(out[i].dims, out[i].dims + out[i].rank);
    r.sizeBytes = out[i].size_bytes;
    // One byte at least, so that an empty output still has an owner to free.
    r.data.reset(new uint8_t[r.sizeBytes ? r.sizeBytes : 1]);
    if (r.sizeBytes)
      std::memcpy(r.data.get(), out[i].data, r.sizeBytes);
  }
  return results;
}

} // namespace onnxc::python
