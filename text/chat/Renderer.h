//===- text/chat/Renderer.h - Running a parsed chat template ---------------===//
//
// Walks the statement tree with jinja2's scoping: a `set` at the top level
// lasts for the rest of the template, a `set` inside a loop body lasts for
// that iteration only (namespace() objects carry values out), and a macro
// sees the template's top-level names and its own parameters. Rendering is
// bounded: output size, evaluation steps and macro recursion have limits, so
// a hostile template fails with an error instead of hanging or exhausting
// memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/chat/Ast.h"

#include <cstddef>
#include <string>

namespace onnxc::text::chat {

struct RenderLimits {
  size_t maxOutputBytes = size_t(64) << 20;
  size_t maxSteps = 4'000'000; // about 4 s; a 1000-message Llama 3.1 chat renders in 12 ms
  int maxCallDepth = 64;
};

/// Renders `body` with `variables` as the context (messages, bos_token, ...).
/// Throws Error "chat template line N: ..." on any failure.
std::string renderTemplate(const StmtList &body, const ValueDict &variables,
                           const RenderLimits &limits = {});

} // namespace onnxc::text::chat
