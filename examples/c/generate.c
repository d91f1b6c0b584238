/*===- examples/c/generate.c - Generate tokens from plain C, linking model.so only ===*
 *
 * A decoder compiled with
 *   onnxc compile gpt2.onnx -o gpt2.so
 * carries the runtime and its generation API (onnxc/onnxc_generate.h): a C
 * program links that one file, with no -lonnxc_runtime:
 *   cc -I<onnxc>/include generate.c gpt2.so -Wl,-rpath,'$ORIGIN' -o generate
 *   ./generate 464,3290,318 32
 * (<onnxc>/include is the installed prefix's, or runtime/include in a source
 * tree; '$ORIGIN' finds gpt2.so beside the program from any working folder.)
 * Prints the greedy continuation of the prompt ids as comma-separated ids,
 * the format of `onnxc generate --prompt-ids`.
 *===----------------------------------------------------------------------===*/
#include "onnxc/onnxc_generate.h"

#include <stdio.h>
#include <stdlib.h>

/* Every model.so exports its descriptor under this name too (model.h
 * declares it with the model's own name as well). */
const onnxc_model_descriptor *onnxc_descriptor(void);

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PROMPT_IDS MAX_NEW_TOKENS   (e.g. 464,3290,318 32)\n", argv[0]);
    return 2;
  }
  int64_t prompt[256];
  int64_t count = 0;
  for (char *text = argv[1]; *text && count < 256;) {
    prompt[count++] = strtoll(text, &text, 10);
    if (*text == ',')
      ++text;
  }
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = atoll(argv[2]);
  options.num_threads = 1;
  onnxc_generator *generator = onnxc_generator_create(onnxc_descriptor(), &options);
  if (!generator) {
    fprintf(stderr, "error: %s\n", onnxc_last_error());
    return 1;
  }
  if (onnxc_generator_prefill(generator, prompt, count) != 0) {
    fprintf(stderr, "error: %s\n", onnxc_generator_error(generator));
    onnxc_generator_destroy(generator);
    return 1;
  }
  int64_t token;
  int status;
  const char *separator = "";
  while ((status = onnxc_generator_next(generator, &token)) == 1) {
    printf("%s%lld", separator, (long long)token);
    separator = ",";
  }
  printf("\n");
  if (status < 0)
    fprintf(stderr, "error: %s\n", onnxc_generator_error(generator));
  onnxc_generator_destroy(generator);
  return status < 0 ? 1 : 0;
}
