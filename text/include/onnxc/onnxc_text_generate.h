/*===- text/include/onnxc/onnxc_text_generate.h - Text in, text out ---------===*
 *
 * Generation with text on both ends: the prompts are encoded with a
 * tokenizer, a generator (onnxc_generate.h) produces the ids, and the ids
 * come back as text through streaming detokenization (a character split
 * across tokens is handed out once it is whole), with stop strings applied.
 *
 *   onnxc_tokenizer *t = onnxc_tokenizer_create("model-folder");
 *   onnxc_generator *g = onnxc_generator_create(onnxc_descriptor(), &options);
 *   onnxc_text_generation_api api = ONNXC_TEXT_GENERATION_API_LINKED;  (or _from_library)
 *   onnxc_text_generate_options o;
 *   onnxc_text_generate_options_init(&o);
 *   o.on_text = print_piece;                   (called per piece of text, as it comes)
 *   const char *prompt = "Once upon a time";
 *   size_t length = strlen(prompt);
 *   onnxc_text_result *r;
 *   if (onnxc_text_generate(t, g, &api, &prompt, &length, 1, &o, &r) != 0)
 *     puts(onnxc_tokenizer_last_error());
 *   onnxc_text_result_destroy(r);
 *
 * This lives in libonnxc_text, not in model.so: a compiled model carries the
 * runtime only, and libonnxc_text links no runtime. So the generation
 * functions are the caller's to give, in onnxc_text_generation_api: the ones
 * of the library that created the generator. A program linked against a
 * model.so fills them with that library's functions
 * (ONNXC_TEXT_GENERATION_API_LINKED, after including onnxc_generate.h); one
 * that dlopen()s it calls onnxc_text_generation_api_from_library with the
 * handle, which looks them up there. The generator keeps its own options
 * (max_new_tokens, sampling, stop ids such as the folder's eos ids).
 *
 * Stop strings: a row ends when its text contains one, and its text is cut
 * before it (as OpenAI's `stop`): text that may be the start of a stop
 * string is held back from on_text until the next tokens tell. The pieces
 * given to on_text concatenate to the row's final text.
 *
 * Functions returning int return 0 on success and -1 on failure, with
 * onnxc_tokenizer_last_error() (per thread) set to one line.
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_ONNXC_TEXT_GENERATE_H
#define ONNXC_ONNXC_TEXT_GENERATE_H

#include "onnxc/onnxc_tokenizer.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct onnxc_generator; /* onnxc_generate.h's generator, opaque here */

/* The generation functions of onnxc_generate.h that text generation calls,
 * all from the library that created the generator. */
typedef struct onnxc_text_generation_api {
  int (*prefill)(struct onnxc_generator *generator, const int64_t *prompt_ids, int64_t count);
  int (*next)(struct onnxc_generator *generator, int64_t *token);
  int (*prefill_batch)(struct onnxc_generator *generator, const int64_t *const *prompts,
                       const int64_t *counts, int64_t rows);
  int (*next_batch)(struct onnxc_generator *generator, int64_t *tokens, int32_t *produced);
  const char *(*error)(const struct onnxc_generator *generator);
} onnxc_text_generation_api;

/* The functions a program linked with a model.so (or the runtime) has; use
 * after including onnxc/onnxc_generate.h. */
#define ONNXC_TEXT_GENERATION_API_LINKED                                                           \
  {                                                                                                \
    onnxc_generator_prefill, onnxc_generator_next, onnxc_generator_prefill_batch,                  \
        onnxc_generator_next_batch, onnxc_generator_error                                          \
  }

/* Fills *api with the functions of a model.so opened with dlopen (`library`
 * is dlopen's handle): -1 naming the first one missing. */
ONNXC_TOKENIZER_API int onnxc_text_generation_api_from_library(void *library,
                                                               onnxc_text_generation_api *api);

/* Called with each piece of row `row`'s text as it is decided (never
 * empty; not NUL-terminated). A non-zero return ends the whole generation
 * (onnxc_text_generate then returns 0 with the text so far). */
typedef int (*onnxc_text_callback)(int64_t row, const char *text, size_t length, void *user_data);

typedef struct onnxc_text_generate_options {
  const char *const *stop; /* stop strings (UTF-8, non-empty), NULL for none */
  int32_t num_stop;
  uint32_t encode_flags; /* onnxc_tokenizer_encode's (default ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS) */
  uint32_t decode_flags; /* onnxc_token_stream_create's (default 0: skip special tokens) */
  /* tokenizer_config.json's add_bos_token: 1 makes every prompt start with
   * bos_token_id, 0 drops a bos_token_id the tokenizer put first; -1
   * (default): as the tokenizer's post-processor says. */
  int32_t add_bos;
  int64_t bos_token_id;        /* -1 (default): none known */
  onnxc_text_callback on_text; /* NULL (default): no streaming */
  void *user_data;
} onnxc_text_generate_options;

ONNXC_TOKENIZER_API void onnxc_text_generate_options_init(onnxc_text_generate_options *options);

typedef struct onnxc_text_result onnxc_text_result;

/* The ids onnxc_text_generate starts a prompt from (encode_flags, add_bos
 * and bos_token_id of `options` applied, NULL for the defaults), e.g. to
 * size max_new_tokens from a context length. Free with
 * onnxc_tokenizer_free_ids. */
ONNXC_TOKENIZER_API int onnxc_text_encode_prompt(const onnxc_tokenizer *tokenizer, const char *text,
                                                 size_t length,
                                                 const onnxc_text_generate_options *options,
                                                 int64_t **ids, size_t *count);

/* Encodes `rows` prompts (prompts[r] of lengths[r] bytes), generates (one
 * prompt: prefill and next; several: a batch, prefill_batch and
 * next_batch) and decodes. *result gets the texts, to free with
 * onnxc_text_result_destroy (NULL on failure). A row of a batch that meets
 * a stop string is left out of the rest of the generation's text; the
 * generator still steps it until every row has ended. */
ONNXC_TOKENIZER_API int
onnxc_text_generate(const onnxc_tokenizer *tokenizer, struct onnxc_generator *generator,
                    const onnxc_text_generation_api *api, const char *const *prompts,
                    const size_t *lengths, int64_t rows, const onnxc_text_generate_options *options,
                    onnxc_text_result **result);

ONNXC_TOKENIZER_API int64_t onnxc_text_result_rows(const onnxc_text_result *result);
/* Row `row`'s generated text (NUL-terminated, *length bytes), or NULL. */
ONNXC_TOKENIZER_API const char *onnxc_text_result_text(const onnxc_text_result *result, int64_t row,
                                                       size_t *length);
/* Row `row`'s generated ids (the one completing a stop string included);
 * returns their number and points *ids at them, or -1. */
ONNXC_TOKENIZER_API int64_t onnxc_text_result_ids(const onnxc_text_result *result, int64_t row,
                                                  const int64_t **ids);
/* The ids of row `row`'s encoded prompt, as onnxc_text_result_ids. */
ONNXC_TOKENIZER_API int64_t onnxc_text_result_prompt_ids(const onnxc_text_result *result,
                                                         int64_t row, const int64_t **ids);
/* The index of the stop string that ended row `row`, or -1 (it ended on a
 * stop id, max_new_tokens, or a callback's stop). */
ONNXC_TOKENIZER_API int32_t onnxc_text_result_stop_index(const onnxc_text_result *result,
                                                         int64_t row);
ONNXC_TOKENIZER_API void onnxc_text_result_destroy(onnxc_text_result *result);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_ONNXC_TEXT_GENERATE_H */
