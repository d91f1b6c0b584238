/*===- runtime/include/onnxc/model_info.h - Checking and reading a descriptor ===*
 *
 * What a program that loads a model it knows nothing about (a dlopen'ed
 * model.so) needs before it trusts the descriptor: one check that every
 * index, count, lifetime and dim expression in it is in range, and readers
 * of the dim expressions (model_abi.h's encoding) so that no loader decodes
 * the words itself. onnxc_session_create runs the same check; a loader that
 * reads the descriptor first (to list inputs, to build a signature) calls it
 * itself.
 *
 *   const char *problem = onnxc_model_check(model);
 *   if (problem) { fprintf(stderr, "%s\n", problem); return 1; }
 *   for (int32_t d = 0; d < model->inputs[0].rank; ++d) {
 *     char text[64];
 *     onnxc_dim_format(model, model->inputs[0].dims[d], text, sizeof text);
 *   }
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_MODEL_INFO_H
#define ONNXC_MODEL_INFO_H

#include "onnxc/model_abi.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Checks `model` (which may be NULL): the ABI version first, then that every
 * index, count, lifetime and dim expression is in range and every symbol
 * source reads a dim that is exactly that symbol. Returns NULL when the
 * descriptor is usable, else one line saying what is wrong, valid until the
 * next call of this function on the same thread. */
const char *onnxc_model_check(const onnxc_model_descriptor *model);

/* Checks that this CPU (and its operating system) offers every feature in
 * the model's cpu_features, as onnxc_session_create does before anything
 * else runs. Returns NULL when it does, else the line naming the missing
 * features, valid until the next call of this function on the same thread.
 * $ONNXC_HIDE_CPU_FEATURES (comma-separated names) makes features count as
 * missing, to try a model's refusal on a CPU that has them. */
const char *onnxc_model_check_cpu(const onnxc_model_descriptor *model);

/* The CPU features the runtime can check, comma-separated LLVM names
 * ("sse3,ssse3,...,avx2,...,amx-tile"): a compiler records each of them its
 * target enables in cpu_features. */
const char *onnxc_cpu_features_checked(void);

/* One term of a dim expression: coefficient * symbols[0] * ... *
 * symbols[degree - 1], the symbols as indices into the model's
 * symbol_names. */
typedef struct onnxc_dim_term {
  int64_t coefficient;
  int32_t degree;
  const int64_t *symbols;
} onnxc_dim_term;

/* The readers below take an expression of a descriptor that passed
 * onnxc_model_check. A NULL expression (or model) reads as no terms, not
 * constant and the empty text. */

/* Number of terms of `expr` (0 for the dim 0). */
int32_t onnxc_dim_num_terms(onnxc_dim_expr expr);
/* Term `index` of `expr`, 0 <= index < onnxc_dim_num_terms(expr); a term of
 * coefficient 0 and degree 0 for an index out of range. */
onnxc_dim_term onnxc_dim_get_term(onnxc_dim_expr expr, int32_t index);
/* Whether `expr` names no symbol; if so, and `value` is not NULL, stores
 * its value there (0 when it does not fit in int64). */
int onnxc_dim_is_constant(onnxc_dim_expr expr, int64_t *value);
/* Writes `expr` as text with the model's symbol names ("batch*seq + 1")
 * into `buffer` (NUL-terminated, truncated to `size` bytes; nothing is
 * written when `buffer` is NULL). Returns the length of the whole text. */
size_t onnxc_dim_format(const onnxc_model_descriptor *model, onnxc_dim_expr expr, char *buffer,
                        size_t size);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_MODEL_INFO_H */
