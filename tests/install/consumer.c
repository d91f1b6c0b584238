/*===- tests/install/consumer.c - A fresh C program using an installed model -===*
 *
 * Built by tests/install/relocate.py against the installed onnxc/onnxc.h and
 * the generated tiny.h only (no source tree on the include path), linked with
 * tiny.so. tiny.onnx computes y = relu(x . W + b) for x of shape [batch, 4];
 * the program runs it on x[i] = i * 0.25 - 1 at batch 3 and prints y, one
 * value a line, for the test to compare with its own computation.
 *===----------------------------------------------------------------------===*/
#include "tiny.h"

#include <stdio.h>

enum { kBatch = 3, kIn = 4, kOut = 3 };

int main(void) {
  float x[kBatch * kIn], y[kBatch * kOut];
  for (int i = 0; i < kBatch * kIn; ++i)
    x[i] = (float)i * 0.25f - 1.0f;
  onnxc_tensor input = {x, ONNXC_F32, 2, {kBatch, kIn}, sizeof x};
  onnxc_tensor output = {y, 0, 0, {0}, sizeof y};
  onnxc_session *session = onnxc_session_create(onnxc_model_tiny(), 1);
  if (!session) {
    fprintf(stderr, "cannot create a session: %s\n", onnxc_last_error());
    return 1;
  }
  if (onnxc_session_run(session, &input, 1, &output, 1) != 0) {
    fprintf(stderr, "run failed: %s\n", onnxc_session_error(session));
    onnxc_session_destroy(session);
    return 1;
  }
  for (int i = 0; i < kBatch * kOut; ++i)
    printf("%.9g\n", y[i]);
  onnxc_session_destroy(session);
  return 0;
}
