/*===- runtime/include/onnxc/onnxc.h - The public C API of compiled models --===*
 *
 * A program links a compiled model.so (or uses the JIT) and runs it:
 *
 *   const onnxc_model_descriptor *model = onnxc_model_<name>();  // from the generated <name>.h
 *   onnxc_session *s = onnxc_session_create(model, 0);            // 0 threads = one per core
 *   onnxc_tensor in[2] = {...}, out[1] = {{0}};                     // out data NULL: library-owned
 *   if (onnxc_session_run(s, in, 2, out, 1) != 0) puts(onnxc_session_error(s));
 *   onnxc_session_destroy(s);
 *
 * <name> is `onnxc compile --name`, by default the library's file name
 * (my-gpt.so -> onnxc_model_my_gpt). Every library also exports
 * onnxc_descriptor(), the same descriptor under one fixed name for loaders
 * that dlopen a model they know nothing about.
 *
 * A session may be used by one thread at a time; use one session per
 * thread to run a model concurrently (sessions share the model's constants).
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_ONNXC_H
#define ONNXC_ONNXC_H

#include "onnxc/model_abi.h"
#include "onnxc/model_info.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONNXC_MAX_RANK 8

typedef struct onnxc_tensor {
  void *data;    /* input: caller's data; output: caller's buffer, or NULL for library-owned */
  int32_t dtype; /* onnxc_dtype; checked for inputs, filled for outputs */
  int32_t rank;
  int64_t dims[ONNXC_MAX_RANK];
  size_t size_bytes; /* input: bytes at data, checked against the dims (0: not checked);
                        output: capacity of a caller buffer; filled with the size used */
} onnxc_tensor;

typedef struct onnxc_session onnxc_session;

/* Creates a session for a model; num_threads 0 means one per core. Returns
 * NULL on failure (ABI version mismatch, out of memory); onnxc_last_error()
 * then says why. */
onnxc_session *onnxc_session_create(const onnxc_model_descriptor *model, int num_threads);
void onnxc_session_destroy(onnxc_session *session);

/* Runs the model. Every input must be given, in the model's order, with its
 * data (a missing input or a NULL data pointer is an error naming it) and
 * the model's dtypes and shapes (symbols bound consistently). Outputs with
 * data == NULL are allocated by the session and stay valid until the next
 * run or destroy; otherwise their size_bytes must be large enough. Returns 0, or non-zero with
 * onnxc_session_error() set to one line naming the input/output at fault. */
int onnxc_session_run(onnxc_session *session, const onnxc_tensor *inputs, int32_t num_inputs,
                      onnxc_tensor *outputs, int32_t num_outputs);

const char *onnxc_session_error(const onnxc_session *session);
/* The error of the last failed onnxc_session_create on this thread. */
const char *onnxc_last_error(void);

/* The most bytes one run may allocate (its arena plus library-owned
 * outputs), checked before allocating: a run over it fails with an error
 * saying what it needed. 0 restores the default, $ONNXC_MEMORY_LIMIT (bytes,
 * or with a K/M/G/T suffix) or else the machine's physical memory. */
void onnxc_session_set_memory_limit(onnxc_session *session, size_t bytes);

/* KV caches updated in place (model_abi.h's onnxc_cache_pair). A model
 * declares the cache inputs ("past") whose output ("present") is the past
 * followed by the new positions. Such a past and present are laid out as a
 * tensor of `capacity` positions on the pair's axis (rows past the bound
 * length are neither read nor written), and the caller may pass ONE buffer as
 * both the past's data and the present's: the run then writes only the new
 * positions, behind the cached ones, so the present of a step is the past of
 * the next without copying the cache. Two distinct buffers work too (the past
 * is copied into the present, in the capacity layout). Every run checks that
 * each present fits (past + new <= capacity) and sizes the paired outputs
 * and inputs (when their size_bytes is set) for the capacity. 0 (the
 * default) makes the capacity each present's length: the dense layout of a
 * model without pairs. Returns 0, or -1 for a negative capacity. */
int onnxc_session_set_cache_capacity(onnxc_session *session, int64_t capacity);
/* The output paired with input `input` (its present), or -1 when the model
 * declares no pair for it. */
int32_t onnxc_session_cache_pair_of_input(const onnxc_session *session, int32_t input);

/* Bytes of arena the last run planned, and the symbol values it bound. */
size_t onnxc_session_arena_bytes(const onnxc_session *session);

/* Per-step profiling (off by default): while enabled, every run adds each
 * step's wall time to that step's total. Enabling resets the totals. */
void onnxc_session_set_profiling(onnxc_session *session, int enabled);
/* Accumulated nanoseconds of step `step` (an index into the descriptor's
 * steps); 0 for an index out of range. */
int64_t onnxc_session_step_nanoseconds(const onnxc_session *session, int32_t step);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_ONNXC_H */
