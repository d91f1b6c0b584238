/*===- tests/ir/Inputs/two_models.c - Two compiled models in one program ---===*
 *
 * Links first.so (graph 'torch_jit', y = 2x + 1) and libsecond.so (graph
 * 'torch_jit' too, y = relu(x) - 3, compiled --name second) and runs both:
 * each named accessor must return its own model, each generic
 * onnxc_descriptor() its own library's, and each run its own result.
 * Usage: two_models FIRST.so SECOND.so; prints one line per model, then
 * "every check passed" and exit code 0 only when every check holds.
 *===----------------------------------------------------------------------===*/
#include "first.h"
#include "libsecond.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { kBatch = 3, kWidth = 4 };

typedef const onnxc_model_descriptor *(*accessor_fn)(void);

static float first_formula(float x) { return 2.0f * x + 1.0f; }
static float second_formula(float x) { return (x > 0.0f ? x : 0.0f) - 3.0f; }

/* Runs `model` on x[i] = i * 0.5 - 2 and compares y with `formula`. */
static int run_and_check(const onnxc_model_descriptor *model, float (*formula)(float)) {
  float x[kBatch * kWidth], y[kBatch * kWidth];
  for (int i = 0; i < kBatch * kWidth; ++i)
    x[i] = (float)i * 0.5f - 2.0f;
  onnxc_tensor input = {x, ONNXC_F32, 2, {kBatch, kWidth}, sizeof x};
  onnxc_tensor output = {y, 0, 0, {0}, sizeof y};
  onnxc_session *session = onnxc_session_create(model, 1);
  if (!session) {
    printf("%s: cannot create a session: %s\n", model->model_name, onnxc_last_error());
    return 0;
  }
  int ok = onnxc_session_run(session, &input, 1, &output, 1) == 0;
  if (!ok)
    printf("%s: run failed: %s\n", model->model_name, onnxc_session_error(session));
  for (int i = 0; ok && i < kBatch * kWidth; ++i)
    if (fabsf(y[i] - formula(x[i])) > 1e-6f) {
      printf("%s: y[%d] = %g for x = %g, expected %g\n", model->model_name, i, y[i], x[i],
             formula(x[i]));
      ok = 0;
    }
  if (ok)
    printf("%s: %d values as expected\n", model->model_name, kBatch * kWidth);
  onnxc_session_destroy(session);
  return ok;
}

/* The generic accessor of the library at `path` (already loaded: linked). */
static const onnxc_model_descriptor *generic_descriptor(const char *path) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    return NULL;
  accessor_fn generic = (accessor_fn)dlsym(handle, "onnxc_descriptor");
  const onnxc_model_descriptor *model = generic ? generic() : NULL;
  dlclose(handle);
  return model;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: two_models FIRST.so SECOND.so\n");
    return 2;
  }
  const onnxc_model_descriptor *first = onnxc_model_first(), *second = onnxc_model_second();
  int ok = 1;
  if (first == second || strcmp(first->model_name, "first") != 0 ||
      strcmp(second->model_name, "second") != 0) {
    printf("the accessors do not return two models: '%s' and '%s'\n", first->model_name,
           second->model_name);
    ok = 0;
  }
  if (generic_descriptor(argv[1]) != first || generic_descriptor(argv[2]) != second) {
    printf("onnxc_descriptor() of a library is not that library's model\n");
    ok = 0;
  }
  if (ONNXC_MODEL_FIRST_NUM_INPUTS != 1 || ONNXC_MODEL_SECOND_INPUT_X != 0) {
    printf("the headers' macros do not describe the models\n");
    ok = 0;
  }
  ok &= run_and_check(first, first_formula);
  ok &= run_and_check(second, second_formula);
  /* The last line says it all, should a pipe drop the exit code. */
  printf(ok ? "every check passed\n" : "some check failed\n");
  return ok ? 0 : 1;
}
