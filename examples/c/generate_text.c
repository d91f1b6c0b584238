/*===- examples/c/generate_text.c - Text in, text out from plain C --------------===*
 *
 * A decoder compiled with `onnxc compile model.onnx -o model.so` and its
 * tokenizer: the program links model.so (the generator) and libonnxc_text.so
 * (the tokenizer and the text loop), and hands the text loop the generation
 * functions of model.so (ONNXC_TEXT_GENERATION_API_LINKED):
 *   cc -I<onnxc>/include generate_text.c model.so -lonnxc_text -o generate_text
 *   ./generate_text TOKENIZER "Once upon a time" 32 [STOP...]
 * (<onnxc>/include holds onnxc_generate.h and onnxc_text_generate.h; in a
 * source tree, runtime/include and text/include.) Prints the text as it
 * comes, then a newline; the generation ends at a STOP string, cut before it.
 *===----------------------------------------------------------------------===*/
#include "onnxc/onnxc_generate.h"
#include "onnxc/onnxc_text_generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every model.so exports its descriptor under this name. */
const onnxc_model_descriptor *onnxc_descriptor(void);

static int print_piece(int64_t row, const char *text, size_t length, void *user_data) {
  (void)row;
  (void)user_data;
  fwrite(text, 1, length, stdout);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TOKENIZER PROMPT MAX_NEW_TOKENS [STOP...]\n", argv[0]);
    return 2;
  }
  onnxc_tokenizer *tokenizer = onnxc_tokenizer_create(argv[1]);
  if (!tokenizer) {
    fprintf(stderr, "error: %s\n", onnxc_tokenizer_last_error());
    return 1;
  }
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = atoll(argv[3]);
  options.num_threads = 1;
  onnxc_generator *generator = onnxc_generator_create(onnxc_descriptor(), &options);
  if (!generator) {
    fprintf(stderr, "error: %s\n", onnxc_last_error());
    onnxc_tokenizer_destroy(tokenizer);
    return 1;
  }
  onnxc_text_generation_api api = ONNXC_TEXT_GENERATION_API_LINKED;
  onnxc_text_generate_options text_options;
  onnxc_text_generate_options_init(&text_options);
  text_options.stop = (const char *const *)(argv + 4);
  text_options.num_stop = argc - 4;
  text_options.on_text = print_piece;
  const char *prompt = argv[2];
  size_t length = strlen(prompt);
  onnxc_text_result *result = NULL;
  int status =
      onnxc_text_generate(tokenizer, generator, &api, &prompt, &length, 1, &text_options, &result);
  printf("\n");
  if (status != 0)
    fprintf(stderr, "error: %s\n", onnxc_tokenizer_last_error());
  else
    fprintf(stderr, "stop string: %d\n", onnxc_text_result_stop_index(result, 0));
  onnxc_text_result_destroy(result);
  onnxc_generator_destroy(generator);
  onnxc_tokenizer_destroy(tokenizer);
  return status != 0;
}
