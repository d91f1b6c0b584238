//===- text/TextGenerateApi.cpp - The onnxc_text_generate C API --------------===//
//
// The C entry points of onnxc_text_generate.h over text/TextGeneration: the
// options checked, the result kept for the caller to read, and the
// generation functions looked up in a dlopen()ed model.so.
//
//===----------------------------------------------------------------------===//
#include "onnxc/onnxc_text_generate.h"

#include "text/CApiSupport.h"
#include "text/TextGeneration.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>

struct onnxc_text_result {
  std::vector<onnxc::text::TextRow> rows;
};

using onnxc::text::guarded;
using onnxc::text::requirePointer;

namespace {

onnxc::text::TextRequest textRequest(const onnxc_text_generate_options &options) {
  const char *name = "onnxc_text_generate";
  onnxc::text::TextRequest request;
  if (options.num_stop < 0)
    onnxc::fail(name, ": num_stop is negative (", options.num_stop, ")");
  if (options.num_stop > 0)
    requirePointer(options.stop, "stop", name);
  for (int32_t i = 0; i < options.num_stop; ++i) {
    if (!options.stop[i])
      onnxc::fail(name, ": stop string ", i, " is NULL");
    request.stops.emplace_back(options.stop[i]);
  }
  if (options.encode_flags & ~(ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS | ONNXC_TOKENIZER_NO_TRUNCATION))
    onnxc::fail(name, ": unknown encode_flags 0x", std::hex, options.encode_flags);
  if (options.decode_flags & ~ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS)
    onnxc::fail(name, ": unknown decode_flags 0x", std::hex, options.decode_flags);
  if (options.add_bos < -1 || options.add_bos > 1)
    onnxc::fail(name, ": add_bos must be -1, 0 or 1, got ", options.add_bos);
  request.addSpecialTokens = options.encode_flags & ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS;
  request.applyLimits = !(options.encode_flags & ONNXC_TOKENIZER_NO_TRUNCATION);
  request.skipSpecialTokens = !(options.decode_flags & ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS);
  request.addBos = options.add_bos;
  request.bosTokenId = options.bos_token_id;
  if (options.on_text) {
    onnxc_text_callback callback = options.on_text;
    void *user = options.user_data;
    request.onText = [callback, user](int64_t row, std::string_view text) {
      return callback(row, text.data(), text.size(), user) != 0;
    };
  }
  return request;
}

const onnxc::text::TextRow *resultRow(const onnxc_text_result *result, int64_t row) {
  if (!result || row < 0 || row >= int64_t(result->rows.size()))
    return nullptr;
  return &result->rows[size_t(row)];
}

} // namespace

extern "C" {

void onnxc_text_generate_options_init(onnxc_text_generate_options *options) {
  if (!options)
    return;
  *options = onnxc_text_generate_options{};
  options->encode_flags = ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS;
  options->add_bos = -1;
  options->bos_token_id = -1;
}

int onnxc_text_generation_api_from_library(void *library, onnxc_text_generation_api *api) {
  return guarded(-1, [&] {
    const char *name = "onnxc_text_generation_api_from_library";
    requirePointer(library, "library", name);
    requirePointer(api, "api", name);
    auto find = [&](const char *symbol) {
      void *address = dlsym(library, symbol);
      if (!address)
        onnxc::fail(name, ": the library does not export ", symbol,
                    " (is it a model.so compiled by onnxc?)");
      return address;
    };
    onnxc_text_generation_api found;
    found.prefill = reinterpret_cast<decltype(found.prefill)>(find("onnxc_generator_prefill"));
    found.next = reinterpret_cast<decltype(found.next)>(find("onnxc_generator_next"));
    found.prefill_batch =
        reinterpret_cast<decltype(found.prefill_batch)>(find("onnxc_generator_prefill_batch"));
    found.next_batch =
        reinterpret_cast<decltype(found.next_batch)>(find("onnxc_generator_next_batch"));
    found.error = reinterpret_cast<decltype(found.error)>(find("onnxc_generator_error"));
    *api = found;
    return 0;
  });
}

int onnxc_text_encode_prompt(const onnxc_tokenizer *tokenizer, const char *text, size_t length,
                             const onnxc_text_generate_options *options, int64_t **ids,
                             size_t *count) {
  return guarded(-1, [&] {
    const char *name = "onnxc_text_encode_prompt";
    requirePointer(tokenizer, "tokenizer", name);
    requirePointer(ids, "ids", name);
    requirePointer(count, "count", name);
    *ids = nullptr;
    *count = 0;
    if (length > 0)
      requirePointer(text, "text", name);
    onnxc_text_generate_options defaults;
    onnxc_text_generate_options_init(&defaults);
    std::vector<int64_t> encoded =
        onnxc::text::encodePrompt(*tokenizer->tokenizer, std::string_view(text ? text : "", length),
                                  textRequest(options ? *options : defaults));
    if (encoded.empty())
      return 0;
    auto *out = static_cast<int64_t *>(std::malloc(encoded.size() * sizeof(int64_t)));
    if (!out)
      throw std::bad_alloc();
    std::copy(encoded.begin(), encoded.end(), out);
    *ids = out;
    *count = encoded.size();
    return 0;
  });
}

int onnxc_text_generate(const onnxc_tokenizer *tokenizer, struct onnxc_generator *generator,
                        const onnxc_text_generation_api *api, const char *const *prompts,
                        const size_t *lengths, int64_t rows,
                        const onnxc_text_generate_options *options, onnxc_text_result **result) {
  return guarded(-1, [&] {
    const char *name = "onnxc_text_generate";
    requirePointer(result, "result", name);
    *result = nullptr;
    requirePointer(tokenizer, "tokenizer", name);
    requirePointer(generator, "generator", name);
    requirePointer(api, "api", name);
    if (rows <= 0)
      onnxc::fail(name, ": rows must be at least 1, got ", rows);
    requirePointer(prompts, "prompts", name);
    requirePointer(lengths, "lengths", name);
    onnxc_text_generate_options defaults;
    onnxc_text_generate_options_init(&defaults);
    onnxc::text::TextRequest request = textRequest(options ? *options : defaults);
    std::vector<std::string_view> texts;
    for (int64_t r = 0; r < rows; ++r) {
      if (lengths[r] > 0 && !prompts[r])
        onnxc::fail(name, ": prompt ", r, " is NULL");
      texts.emplace_back(prompts[r] ? prompts[r] : "", lengths[r]);
    }
    auto out = std::make_unique<onnxc_text_result>();
    out->rows = onnxc::text::generateText(*tokenizer->tokenizer, generator, *api, texts, request);
    *result = out.release();
    return 0;
  });
}

int64_t onnxc_text_result_rows(const onnxc_text_result *result) {
  return result ? int64_t(result->rows.size()) : -1;
}

const char *onnxc_text_result_text(const onnxc_text_result *result, int64_t row, size_t *length) {
  const onnxc::text::TextRow *found = resultRow(result, row);
  if (length)
    *length = found ? found->text.size() : 0;
  return found ? found->text.c_str() : nullptr;
}

int64_t onnxc_text_result_ids(const onnxc_text_result *result, int64_t row, const int64_t **ids) {
  const onnxc::text::TextRow *found = resultRow(result, row);
  if (!found || !ids)
    return -1;
  *ids = found->ids.data();
  return int64_t(found->ids.size());
}

int64_t onnxc_text_result_prompt_ids(const onnxc_text_result *result, int64_t row,
                                     const int64_t **ids) {
  const onnxc::text::TextRow *found = resultRow(result, row);
  if (!found || !ids)
    return -1;
  *ids = found->promptIds.data();
  return int64_t(found->promptIds.size());
}

int32_t onnxc_text_result_stop_index(const onnxc_text_result *result, int64_t row) {
  const onnxc::text::TextRow *found = resultRow(result, row);
  return found ? found->stopIndex : -1;
}

void onnxc_text_result_destroy(onnxc_text_result *result) { delete result; }

} // extern "C"
