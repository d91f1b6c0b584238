/*===- examples/c/run_model.c - Run a compiled model from plain C ---------===*
 *
 * Shows the whole C side of onnxc: a model compiled with
 *   onnxc compile model.onnx -o model.so      (also writes model.h)
 * is linked and run without any onnxc tool or Python:
 *   cc -I<onnxc>/runtime/include -I. run_model.c model.so -Wl,-rpath,'$ORIGIN' -o run_model
 *   ./run_model batch=2 seq=16
 * '$ORIGIN' (quoted so the shell leaves it alone) is the program's own folder,
 * so it finds model.so beside it from any working directory; a program kept
 * elsewhere than its model links with -Wl,-rpath,/absolute/folder/of/model.
 * (-rpath,. would be the working directory: it fails when run from elsewhere.)
 * Symbols (batch, seq, ...) default to 1 and are set with name=value. Inputs
 * are filled with a fixed pattern; each output is printed with its shape.
 * Another header name: -DONNXC_MODEL_HEADER='"bert.h"'.
 *===----------------------------------------------------------------------===*/
#ifdef ONNXC_MODEL_HEADER
#include ONNXC_MODEL_HEADER
#else
#include "model.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The element size and printable name of each onnxc_dtype. */
static const struct {
  const char *name;
  size_t size;
} dtypes[] = {{"?", 0},   {"f32", 4}, {"f64", 8}, {"f16", 2}, {"bf16", 2}, {"i8", 1},  {"u8", 1},
              {"i16", 2}, {"u16", 2}, {"i32", 4}, {"u32", 4}, {"i64", 8},  {"u64", 8}, {"bool", 1}};

/* Evaluates a dim expression (see model_abi.h) for the chosen symbol values. */
static int64_t evaluate_dim(onnxc_dim_expr expr, const int64_t *symbols) {
  int64_t num_terms = *expr++, total = 0;
  for (int64_t t = 0; t < num_terms; ++t) {
    int64_t term = *expr++, degree = *expr++;
    for (int64_t d = 0; d < degree; ++d)
      term *= symbols[*expr++];
    total += term;
  }
  return total;
}

/* A deterministic input pattern the caller can reproduce: i % 10 / 4 - 1. */
static void fill_input(onnxc_tensor *tensor, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (tensor->dtype == ONNXC_F32)
      ((float *)tensor->data)[i] = (float)(i % 10) * 0.25f - 1.0f;
    else if (tensor->dtype == ONNXC_I64)
      ((int64_t *)tensor->data)[i] = (int64_t)(i % 7);
    else if (tensor->dtype == ONNXC_I32)
      ((int32_t *)tensor->data)[i] = (int32_t)(i % 7);
  }
}

static void print_output(const onnxc_model_descriptor *model, int index, const onnxc_tensor *t) {
  size_t count = 1;
  printf("%s: %s [", model->outputs[index].name, dtypes[t->dtype].name);
  for (int32_t axis = 0; axis < t->rank; ++axis) {
    printf(axis ? ", %lld" : "%lld", (long long)t->dims[axis]);
    count *= (size_t)t->dims[axis];
  }
  printf("] =");
  for (size_t i = 0; i < count && i < 16; ++i) {
    if (t->dtype == ONNXC_F32)
      printf(" %g", ((const float *)t->data)[i]);
    else if (t->dtype == ONNXC_I64)
      printf(" %lld", (long long)((const int64_t *)t->data)[i]);
  }
  printf(count > 16 ? " ...\n" : "\n");
}

/* Symbol values from "name=value" arguments; every symbol defaults to 1. */
static int bind_symbols(const onnxc_model_descriptor *model, int argc, char **argv,
                        int64_t *symbols) {
  for (int32_t s = 0; s < model->num_symbols; ++s)
    symbols[s] = 1;
  for (int i = 1; i < argc; ++i) {
    const char *equals = strchr(argv[i], '=');
    int32_t s = 0;
    while (equals && s < model->num_symbols &&
           (strlen(model->symbol_names[s]) != (size_t)(equals - argv[i]) ||
            strncmp(model->symbol_names[s], argv[i], (size_t)(equals - argv[i])) != 0))
      ++s;
    if (!equals || s == model->num_symbols) {
      fprintf(stderr, "error: '%s' is not symbol=value for a symbol of model '%s'\n", argv[i],
              model->model_name);
      return 0;
    }
    symbols[s] = atoll(equals + 1);
  }
  return 1;
}

/* Every exit goes through one cleanup, so the error paths free what they took. */
int main(int argc, char **argv) {
  const onnxc_model_descriptor *model = ONNXC_DEFAULT_MODEL();
  int status = 1;
  onnxc_session *session = NULL;
  int64_t *symbols = calloc((size_t)model->num_symbols + 1, sizeof(int64_t));
  onnxc_tensor *inputs = calloc((size_t)model->num_inputs + 1, sizeof(onnxc_tensor));
  onnxc_tensor *outputs = calloc((size_t)model->num_outputs + 1, sizeof(onnxc_tensor));
  if (!symbols || !inputs || !outputs) {
    fprintf(stderr, "error: out of memory\n");
    goto done;
  }
  if (!bind_symbols(model, argc, argv, symbols)) {
    status = 2;
    goto done;
  }

  for (int32_t i = 0; i < model->num_inputs; ++i) {
    const onnxc_tensor_info *info = &model->inputs[i];
    size_t count = 1;
    inputs[i].dtype = info->dtype;
    inputs[i].rank = info->rank;
    for (int32_t axis = 0; axis < info->rank; ++axis) {
      inputs[i].dims[axis] = evaluate_dim(info->dims[axis], symbols);
      count *= (size_t)inputs[i].dims[axis];
    }
    inputs[i].size_bytes = count * dtypes[info->dtype].size;
    inputs[i].data = calloc(count + 1, dtypes[info->dtype].size);
    if (!inputs[i].data) {
      fprintf(stderr, "error: out of memory for input '%s'\n", info->name);
      goto done;
    }
    fill_input(&inputs[i], count);
  }

  session = onnxc_session_create(model, 1);
  if (!session) {
    fprintf(stderr, "error: %s\n", onnxc_last_error());
    goto done;
  }
  /* Outputs with data == NULL are allocated by the session (freed with it). */
  if (onnxc_session_run(session, inputs, model->num_inputs, outputs, model->num_outputs) != 0) {
    fprintf(stderr, "error: %s\n", onnxc_session_error(session));
    goto done;
  }
  for (int32_t o = 0; o < model->num_outputs; ++o)
    print_output(model, o, &outputs[o]);
  status = 0;

done:
  onnxc_session_destroy(session);
  for (int32_t i = 0; inputs && i < model->num_inputs; ++i)
    free(inputs[i].data);
  free(inputs);
  free(outputs);
  free(symbols);
  return status;
}
