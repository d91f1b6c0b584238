/*===- text/include/onnxc/onnxc_chat.h - Chat templates: messages to a prompt ===*
 *
 * A model's chat template (tokenizer_config.json's "chat_template", or
 * chat_template.jinja) rendered as HF transformers' apply_chat_template
 * renders it (transformers 4.40: jinja2 with trim_blocks and lstrip_blocks).
 * Part of libonnxc_text, beside the tokenizers.
 *
 *   onnxc_chat_template *t = onnxc_chat_template_load("model-folder");
 *   if (!t) { puts(onnxc_chat_template_last_error()); return 1; }
 *   char *prompt; size_t length;
 *   if (onnxc_chat_template_apply(t, "[{\"role\": \"user\", \"content\": \"Hi\"}]", NULL, 1,
 *                                 &prompt, &length) != 0)
 *     puts(onnxc_chat_template_last_error());
 *   onnxc_chat_template_free_text(prompt);
 *   onnxc_chat_template_destroy(t);
 *
 * Messages are a JSON array of objects ({"role", "content"} and whatever
 * else the template reads, e.g. "tool_calls"), key order kept. Extra
 * variables (e.g. {"tools": [...]}) are an optional JSON object; they
 * override the special tokens read from tokenizer_config.json.
 *
 * A template using a construct outside onnxc's Jinja subset fails to load
 * with one line naming it ("chat template line 3: unsupported tag
 * 'include'"); a template that calls raise_exception fails to apply with
 * "chat template line N: raise_exception: <its message>".
 *
 * Functions returning int return 0 on success and -1 on failure, with
 * onnxc_chat_template_last_error() (per thread) set to one line. A template
 * may be applied from several threads at once.
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_ONNXC_CHAT_H
#define ONNXC_ONNXC_CHAT_H

#include <stddef.h>

#if defined(__GNUC__)
#define ONNXC_CHAT_API __attribute__((visibility("default")))
#else
#define ONNXC_CHAT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct onnxc_chat_template onnxc_chat_template;

/* The last error of this thread's failed call ("" if none). */
ONNXC_CHAT_API const char *onnxc_chat_template_last_error(void);

/* Loads the chat template of a model folder (chat_template.jinja, else
 * tokenizer_config.json), of a tokenizer_config.json, or of a .jinja file;
 * NULL on failure. */
ONNXC_CHAT_API onnxc_chat_template *onnxc_chat_template_load(const char *path);
/* Parses template text (no special tokens: pass them as variables); NULL on failure. */
ONNXC_CHAT_API onnxc_chat_template *onnxc_chat_template_from_string(const char *text,
                                                                    size_t length);
ONNXC_CHAT_API void onnxc_chat_template_destroy(onnxc_chat_template *chat_template);

/* Renders `messages_json` (NUL-terminated UTF-8). `variables_json` may be NULL.
 * *text gets a NUL-terminated string of *length bytes, to free with
 * onnxc_chat_template_free_text. */
ONNXC_CHAT_API int onnxc_chat_template_apply(const onnxc_chat_template *chat_template,
                                             const char *messages_json, const char *variables_json,
                                             int add_generation_prompt, char **text,
                                             size_t *length);
ONNXC_CHAT_API void onnxc_chat_template_free_text(char *text);

/* The template's source text (owned by the template). */
ONNXC_CHAT_API const char *onnxc_chat_template_source(const onnxc_chat_template *chat_template);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_ONNXC_CHAT_H */
