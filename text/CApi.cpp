//===- text/CApi.cpp - The onnxc_tokenizer_* C API ---------------------------===//
//
// Every entry point catches everything: a C caller sees -1 or NULL and one
// line from onnxc_tokenizer_last_error(), never an exception. Pointers and
// counts are checked before use.
//
//===----------------------------------------------------------------------===//
#include "onnxc/onnxc_tokenizer.h"

#include "ir/Error.h"
#include "text/CApiSupport.h"
#include "text/DecodeStream.h"

#include <cstdlib>
#include <cstring>
#include <new>

struct onnxc_token_stream {
  onnxc::text::DecodeStream stream;
  std::string text;
};

using onnxc::text::guarded;
using onnxc::text::lastError;
using onnxc::text::requirePointer;

std::string &onnxc::text::lastError() {
  thread_local std::string error;
  return error;
}

extern "C" {

const char *onnxc_tokenizer_last_error(void) { return lastError().c_str(); }

onnxc_tokenizer *onnxc_tokenizer_create(const char *path) {
  return guarded<onnxc_tokenizer *>(nullptr, [&] {
    requirePointer(path, "path", "onnxc_tokenizer_create");
    return new onnxc_tokenizer{onnxc::text::loadTokenizer(path)};
  });
}

onnxc_tokenizer *onnxc_tokenizer_create_from_json(const char *json, size_t length) {
  return guarded<onnxc_tokenizer *>(nullptr, [&] {
    if (length > 0)
      requirePointer(json, "json", "onnxc_tokenizer_create_from_json");
    return new onnxc_tokenizer{onnxc::text::tokenizerFromJson(
        std::string_view(json ? json : "", length), "tokenizer.json")};
  });
}

void onnxc_tokenizer_destroy(onnxc_tokenizer *tokenizer) { delete tokenizer; }

int onnxc_tokenizer_encode(const onnxc_tokenizer *tokenizer, const char *text, size_t length,
                           uint32_t flags, int64_t **ids, size_t *count) {
  return guarded(-1, [&] {
    const char *name = "onnxc_tokenizer_encode";
    requirePointer(tokenizer, "tokenizer", name);
    requirePointer(ids, "ids", name);
    requirePointer(count, "count", name);
    *ids = nullptr;
    *count = 0;
    if (length > 0)
      requirePointer(text, "text", name);
    if (flags & ~(ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS | ONNXC_TOKENIZER_NO_TRUNCATION))
      onnxc::fail(name, ": unknown flags 0x", std::hex, flags);
    std::vector<uint32_t> encoded = tokenizer->tokenizer->encode(
        std::string_view(text ? text : "", length), flags & ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS,
        !(flags & ONNXC_TOKENIZER_NO_TRUNCATION));
    if (encoded.empty())
      return 0;
    auto *out = static_cast<int64_t *>(std::malloc(encoded.size() * sizeof(int64_t)));
    if (!out)
      throw std::bad_alloc();
    for (size_t i = 0; i < encoded.size(); ++i)
      out[i] = encoded[i];
    *ids = out;
    *count = encoded.size();
    return 0;
  });
}

void onnxc_tokenizer_free_ids(int64_t *ids) { std::free(ids); }

static std::vector<uint32_t> checkedIds(const int64_t *ids, size_t count, const char *name) {
  if (count > 0)
    requirePointer(ids, "ids", name);
  std::vector<uint32_t> out(count);
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] > UINT32_MAX)
      onnxc::fail(name, ": id ", ids[i], " at index ", i, " is out of range");
    out[i] = static_cast<uint32_t>(ids[i]);
  }
  return out;
}

static char *copyText(const std::string &text) {
  auto *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (!out)
    throw std::bad_alloc();
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

int onnxc_tokenizer_decode(const onnxc_tokenizer *tokenizer, const int64_t *ids, size_t count,
                           uint32_t flags, char **text, size_t *length) {
  return guarded(-1, [&] {
    const char *name = "onnxc_tokenizer_decode";
    requirePointer(tokenizer, "tokenizer", name);
    requirePointer(text, "text", name);
    requirePointer(length, "length", name);
    *text = nullptr;
    *length = 0;
    if (flags & ~ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS)
      onnxc::fail(name, ": unknown flags 0x", std::hex, flags);
    std::vector<uint32_t> checked = checkedIds(ids, count, name);
    std::string decoded =
        tokenizer->tokenizer->decode(checked, !(flags & ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS));
    *text = copyText(decoded);
    *length = decoded.size();
    return 0;
  });
}

void onnxc_tokenizer_free_text(char *text) { std::free(text); }

int64_t onnxc_tokenizer_token_to_id(const onnxc_tokenizer *tokenizer, const char *token) {
  return guarded<int64_t>(-1, [&]() -> int64_t {
    requirePointer(tokenizer, "tokenizer", "onnxc_tokenizer_token_to_id");
    requirePointer(token, "token", "onnxc_tokenizer_token_to_id");
    std::optional<uint32_t> id = tokenizer->tokenizer->tokenToId(token);
    return id ? static_cast<int64_t>(*id) : -1;
  });
}

int64_t onnxc_tokenizer_vocab_size(const onnxc_tokenizer *tokenizer) {
  return guarded<int64_t>(-1, [&] {
    requirePointer(tokenizer, "tokenizer", "onnxc_tokenizer_vocab_size");
    return static_cast<int64_t>(tokenizer->tokenizer->vocabSize());
  });
}

onnxc_token_stream *onnxc_token_stream_create(const onnxc_tokenizer *tokenizer, uint32_t flags) {
  return guarded<onnxc_token_stream *>(nullptr, [&] {
    requirePointer(tokenizer, "tokenizer", "onnxc_token_stream_create");
    if (flags & ~ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS)
      onnxc::fail("onnxc_token_stream_create: unknown flags 0x", std::hex, flags);
    bool skip = !(flags & ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS);
    return new onnxc_token_stream{onnxc::text::DecodeStream(*tokenizer->tokenizer, skip), {}};
  });
}

int onnxc_token_stream_push(onnxc_token_stream *stream, int64_t id, const char **text,
                            size_t *length) {
  return guarded(-1, [&] {
    const char *name = "onnxc_token_stream_push";
    requirePointer(stream, "stream", name);
    requirePointer(text, "text", name);
    requirePointer(length, "length", name);
    std::vector<uint32_t> checked = checkedIds(&id, 1, name);
    stream->text = stream->stream.push(checked[0]);
    *text = stream->text.c_str();
    *length = stream->text.size();
    return 0;
  });
}

int onnxc_token_stream_finish(onnxc_token_stream *stream, const char **text, size_t *length) {
  return guarded(-1, [&] {
    const char *name = "onnxc_token_stream_finish";
    requirePointer(stream, "stream", name);
    requirePointer(text, "text", name);
    requirePointer(length, "length", name);
    stream->text = stream->stream.finish();
    *text = stream->text.c_str();
    *length = stream->text.size();
    return 0;
  });
}

void onnxc_token_stream_destroy(onnxc_token_stream *stream) { delete stream; }

} // extern "C"
