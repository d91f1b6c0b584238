//===- runtime/CApi.cpp - The C functions of onnxc.h -----------------------===//
//
// The boundary between C callers and the C++ runtime: no exception crosses
// it, and every failure becomes a message the caller can fetch.
//
//===----------------------------------------------------------------------===//
#include "Session.h"
#include "onnxc/onnxc.h"

#include <exception>
#include <string>

struct onnxc_session {
  std::unique_ptr<onnxc::runtime::Session> impl;
};

namespace {

/// onnxc_session_create has no session to hold its error, so the message is
/// kept per thread, like errno.
thread_local std::string lastCreateError;

} // namespace

extern "C" {

onnxc_session *onnxc_session_create(const onnxc_model_descriptor *model, int num_threads) {
  try {
    std::string error;
    auto impl = onnxc::runtime::Session::create(model, num_threads, error);
    if (!impl) {
      lastCreateError = std::move(error);
      return nullptr;
    }
    lastCreateError.clear();
    return new onnxc_session{std::move(impl)};
  } catch (const std::bad_alloc &) {
    lastCreateError = "out of memory";
  } catch (const std::exception &exception) {
    // std::system_error when the OS refuses another thread.
    lastCreateError = std::string("cannot create the session: ") + exception.what();
  }
  return nullptr;
}

void onnxc_session_destroy(onnxc_session *session) { delete session; }

int onnxc_session_run(onnxc_session *session, const onnxc_tensor *inputs, int32_t num_inputs,
                      onnxc_tensor *outputs, int32_t num_outputs) {
  if (!session)
    return -1;
  return session->impl->run(inputs, num_inputs, outputs, num_outputs) ? 0 : 1;
}

const char *onnxc_session_error(const onnxc_session *session) {
  if (!session)
    return "the session is NULL";
  return session->impl->error().c_str();
}

const char *onnxc_last_error(void) { return lastCreateError.c_str(); }

size_t onnxc_session_arena_bytes(const onnxc_session *session) {
  return session ? session->impl->arenaBytes() : 0;
}

void onnxc_session_set_memory_limit(onnxc_session *session, size_t bytes) {
  if (session)
    session->impl->setMemoryLimit(bytes > size_t(INT64_MAX) ? INT64_MAX : int64_t(bytes));
}

void onnxc_session_set_profiling(onnxc_session *session, int enabled) {
  if (session)
    session->impl->setProfiling(enabled != 0);
}

int64_t onnxc_session_step_nanoseconds(const onnxc_session *session, int32_t step) {
  return session ? session->impl->stepNanoseconds(step) : 0;
}

} // extern "C"
