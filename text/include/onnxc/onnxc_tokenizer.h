/*===- text/include/onnxc/onnxc_tokenizer.h - Tokenizers: text to ids and back ===*
 *
 * The tokenizers of libonnxc_text (a library of its own: a compiled
 * model.so does not link it, nor PCRE2, utf8proc or SentencePiece).
 *
 *   onnxc_tokenizer *t = onnxc_tokenizer_create("model-folder");
 *   if (!t) { puts(onnxc_tokenizer_last_error()); return 1; }
 *   int64_t *ids; size_t count;
 *   if (onnxc_tokenizer_encode(t, "Hello", 5, ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS,
 *                              &ids, &count) != 0)
 *     puts(onnxc_tokenizer_last_error());
 *   char *text; size_t length;
 *   onnxc_tokenizer_decode(t, ids, count, 0, &text, &length);
 *   onnxc_tokenizer_free_ids(ids);
 *   onnxc_tokenizer_free_text(text);
 *   onnxc_tokenizer_destroy(t);
 *
 * A tokenizer is an HF tokenizer.json, a SentencePiece .model, or a folder
 * holding one (tokenizer.json first). Defaults follow HF tokenizers: encode
 * applies the file's post-processor (special tokens) with
 * ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS, and its truncation and padding unless
 * ONNXC_TOKENIZER_NO_TRUNCATION; decode skips special tokens unless
 * ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS, and leaves out ids it does not know.
 *
 * Functions returning int return 0 on success and -1 on failure, with
 * onnxc_tokenizer_last_error() (per thread) set to one line. A tokenizer may
 * be used from several threads at once; a stream from one at a time.
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_ONNXC_TOKENIZER_H
#define ONNXC_ONNXC_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ONNXC_TOKENIZER_API __attribute__((visibility("default")))
#else
#define ONNXC_TOKENIZER_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct onnxc_tokenizer onnxc_tokenizer;
typedef struct onnxc_token_stream onnxc_token_stream;

/* Flags of onnxc_tokenizer_encode. */
#define ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS 1u /* BOS/EOS, [CLS]/[SEP], ... as the file says */
#define ONNXC_TOKENIZER_NO_TRUNCATION 2u      /* ignore the file's truncation and padding */
/* Flags of onnxc_tokenizer_decode and onnxc_token_stream_create. */
#define ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS 1u

/* The last error of this thread's failed call ("" if none). */
ONNXC_TOKENIZER_API const char *onnxc_tokenizer_last_error(void);

/* Loads a tokenizer.json, a .model file or a model folder; NULL on failure. */
ONNXC_TOKENIZER_API onnxc_tokenizer *onnxc_tokenizer_create(const char *path);
/* Reads the text of a tokenizer.json; NULL on failure. */
ONNXC_TOKENIZER_API onnxc_tokenizer *onnxc_tokenizer_create_from_json(const char *json,
                                                                      size_t length);
ONNXC_TOKENIZER_API void onnxc_tokenizer_destroy(onnxc_tokenizer *tokenizer);

/* Encodes `length` bytes of UTF-8 `text` (invalid UTF-8 fails). *ids gets
 * an array to free with onnxc_tokenizer_free_ids (NULL when *count is 0). */
ONNXC_TOKENIZER_API int onnxc_tokenizer_encode(const onnxc_tokenizer *tokenizer, const char *text,
                                               size_t length, uint32_t flags, int64_t **ids,
                                               size_t *count);
ONNXC_TOKENIZER_API void onnxc_tokenizer_free_ids(int64_t *ids);

/* Decodes `count` ids (a negative id fails). *text gets a NUL-terminated
 * UTF-8 string of *length bytes, to free with onnxc_tokenizer_free_text. */
ONNXC_TOKENIZER_API int onnxc_tokenizer_decode(const onnxc_tokenizer *tokenizer, const int64_t *ids,
                                               size_t count, uint32_t flags, char **text,
                                               size_t *length);
ONNXC_TOKENIZER_API void onnxc_tokenizer_free_text(char *text);

/* The id of a token string (added tokens included), or -1. */
ONNXC_TOKENIZER_API int64_t onnxc_tokenizer_token_to_id(const onnxc_tokenizer *tokenizer,
                                                        const char *token);
/* One past the largest id, or -1 for a NULL tokenizer. */
ONNXC_TOKENIZER_API int64_t onnxc_tokenizer_vocab_size(const onnxc_tokenizer *tokenizer);

/* Streaming detokenization: push ids one at a time; each push hands out the
 * text they complete, holding back a character split across tokens until it
 * is whole. The tokenizer must outlive the stream. */
ONNXC_TOKENIZER_API onnxc_token_stream *onnxc_token_stream_create(const onnxc_tokenizer *tokenizer,
                                                                  uint32_t flags);
/* *text (NUL-terminated, *length bytes, possibly empty) stays valid until the
 * next call on the stream. */
ONNXC_TOKENIZER_API int onnxc_token_stream_push(onnxc_token_stream *stream, int64_t id,
                                                const char **text, size_t *length);
/* What is left at the end; a partial character comes out as U+FFFD. */
ONNXC_TOKENIZER_API int onnxc_token_stream_finish(onnxc_token_stream *stream, const char **text,
                                                  size_t *length);
ONNXC_TOKENIZER_API void onnxc_token_stream_destroy(onnxc_token_stream *stream);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_ONNXC_TOKENIZER_H */
