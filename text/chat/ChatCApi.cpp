//===- text/chat/ChatCApi.cpp - The onnxc_chat_template_* C API ------------===//
//
// As the tokenizer's C API: every entry point catches everything, so a C
// caller sees -1 or NULL and one line from onnxc_chat_template_last_error().
//
//===----------------------------------------------------------------------===//
#include "onnxc/onnxc_chat.h"

#include "ir/Error.h"
#include "text/chat/ChatTemplate.h"

#include <cstdlib>
#include <cstring>
#include <new>

struct onnxc_chat_template {
  std::unique_ptr<onnxc::text::chat::ChatTemplate> chat;
};

namespace {

thread_local std::string lastError;

template <typename Result, typename Body> Result guarded(Result failed, Body body) {
  try {
    lastError.clear();
    return body();
  } catch (const std::bad_alloc &) {
    lastError = "out of memory";
  } catch (const std::exception &e) {
    lastError = e.what();
  } catch (...) {
    lastError = "unknown error";
  }
  return failed;
}

void requirePointer(const void *pointer, const char *what, const char *function) {
  if (!pointer)
    onnxc::fail(function, ": ", what, " is NULL");
}

} // namespace

extern "C" {

const char *onnxc_chat_template_last_error(void) { return lastError.c_str(); }

onnxc_chat_template *onnxc_chat_template_load(const char *path) {
  return guarded<onnxc_chat_template *>(nullptr, [&] {
    requirePointer(path, "path", "onnxc_chat_template_load");
    return new onnxc_chat_template{onnxc::text::chat::ChatTemplate::load(path)};
  });
}

onnxc_chat_template *onnxc_chat_template_from_string(const char *text, size_t length) {
  return guarded<onnxc_chat_template *>(nullptr, [&] {
    if (length > 0)
      requirePointer(text, "text", "onnxc_chat_template_from_string");
    return new onnxc_chat_template{
        onnxc::text::chat::ChatTemplate::fromString(std::string_view(text ? text : "", length))};
  });
}

void onnxc_chat_template_destroy(onnxc_chat_template *chat_template) { delete chat_template; }

int onnxc_chat_template_apply(const onnxc_chat_template *chat_template, const char *messages_json,
                              const char *variables_json, int add_generation_prompt, char **text,
                              size_t *length) {
  return guarded(-1, [&] {
    const char *name = "onnxc_chat_template_apply";
    requirePointer(chat_template, "chat_template", name);
    requirePointer(messages_json, "messages_json", name);
    requirePointer(text, "text", name);
    requirePointer(length, "length", name);
    *text = nullptr;
    *length = 0;
    std::string rendered = chat_template->chat->applyJson(messages_json, add_generation_prompt != 0,
                                                          variables_json ? variables_json : "");
    auto *out = static_cast<char *>(std::malloc(rendered.size() + 1));
    if (!out)
      throw std::bad_alloc();
    std::memcpy(out, rendered.data(), rendered.size());
    out[rendered.size()] = '\0';
    *text = out;
    *length = rendered.size();
    return 0;
  });
}

void onnxc_chat_template_free_text(char *text) { std::free(text); }

const char *onnxc_chat_template_source(const onnxc_chat_template *chat_template) {
  return guarded<const char *>(nullptr, [&] {
    requirePointer(chat_template, "chat_template", "onnxc_chat_template_source");
    return chat_template->chat->source().c_str();
  });
}

} // extern "C"
