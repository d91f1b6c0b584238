/*===- examples/c/tokenize.c - Text to ids and back from plain C --------------===*
 *
 * Uses libonnxc_text's C API (onnxc_tokenizer.h): encodes the text with the
 * tokenizer's special tokens, prints the ids on one comma-separated line, then
 * prints the text again by streaming the ids back one at a time, as a token
 * generator would.
 *
 *   cc tokenize.c -I PREFIX/include -L PREFIX/lib -lonnxc_text -o tokenize
 *   ./tokenize model-folder "Hello world"
 *===----------------------------------------------------------------------===*/
#include "onnxc/onnxc_tokenizer.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s TOKENIZER|FOLDER TEXT\n", argv[0]);
    return 2;
  }
  onnxc_tokenizer *tokenizer = onnxc_tokenizer_create(argv[1]);
  if (!tokenizer) {
    fprintf(stderr, "error: %s\n", onnxc_tokenizer_last_error());
    return 1;
  }
  int64_t *ids = NULL;
  size_t count = 0;
  if (onnxc_tokenizer_encode(tokenizer, argv[2], strlen(argv[2]),
                             ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS, &ids, &count) != 0) {
    fprintf(stderr, "error: %s\n", onnxc_tokenizer_last_error());
    onnxc_tokenizer_destroy(tokenizer);
    return 1;
  }
  for (size_t i = 0; i < count; ++i)
    printf("%s%lld", i ? "," : "", (long long)ids[i]);
  printf("\n");

  onnxc_token_stream *stream = onnxc_token_stream_create(tokenizer, 0);
  const char *piece;
  size_t length;
  int status = stream ? 0 : -1;
  for (size_t i = 0; i < count && status == 0; ++i)
    if ((status = onnxc_token_stream_push(stream, ids[i], &piece, &length)) == 0)
      fwrite(piece, 1, length, stdout);
  if (status == 0 && (status = onnxc_token_stream_finish(stream, &piece, &length)) == 0)
    fwrite(piece, 1, length, stdout);
  printf("\n");
  if (status != 0)
    fprintf(stderr, "error: %s\n", onnxc_tokenizer_last_error());
  onnxc_token_stream_destroy(stream);
  onnxc_tokenizer_free_ids(ids);
  onnxc_tokenizer_destroy(tokenizer);
  return status == 0 ? 0 : 1;
}
