/*===- runtime/include/onnxc/model_abi.h - Compiled model <-> runtime ABI ---===*
 *
 * A compiled model (JIT module or model.so) exports one constant
 * `onnxc_model_descriptor` that describes everything the runtime needs, as
 * data: symbols, inputs and outputs with symbolic shapes, buffers with
 * symbolic sizes and lifetimes, and the steps (kernels) to run in order.
 * Kernels are generated code; the runtime only binds symbols, plans the
 * arena, and calls the steps on its thread pool.
 *
 * Plain C so generated code, the runtime and user programs agree on layout.
 * Any change to this file bumps ONNXC_ABI_VERSION.
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_MODEL_ABI_H
#define ONNXC_MODEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONNXC_ABI_VERSION 7

/* Element types (values fixed forever). */
typedef enum onnxc_dtype {
  ONNXC_F32 = 1,
  ONNXC_F64 = 2,
  ONNXC_F16 = 3,
  ONNXC_BF16 = 4,
  ONNXC_I8 = 5,
  ONNXC_U8 = 6,
  ONNXC_I16 = 7,
  ONNXC_U16 = 8,
  ONNXC_I32 = 9,
  ONNXC_U32 = 10,
  ONNXC_I64 = 11,
  ONNXC_U64 = 12,
  ONNXC_BOOL = 13
} onnxc_dtype;

/* A symbolic dimension or size: an integer polynomial over the model's
 * symbols, encoded as int64 words:
 *   numTerms, then per term: coefficient, degree, symbolIndex x degree.
 * Example: batch*seq*256 + 64 with batch=0, seq=1 is
 *   {2,  256, 2, 0, 1,  64, 0}. */
typedef const int64_t *onnxc_dim_expr;

typedef struct onnxc_tensor_info {
  const char *name;
  int32_t dtype; /* onnxc_dtype */
  int32_t rank;
  const onnxc_dim_expr *dims; /* rank expressions */
  const char *shape_text;     /* "[batch, seq, 64]", for messages */
} onnxc_tensor_info;

/* Where a symbol's value is read from: axis `axis` of input `input`. Every
 * symbol appears in some input's shape; other input dims are then checked
 * against their expressions. A cache capacity symbol (onnxc_cache_pair) has
 * input = axis = -1: the runtime binds it itself. */
typedef struct onnxc_symbol_source {
  int32_t input;
  int32_t axis;
} onnxc_symbol_source;

typedef enum onnxc_buffer_kind {
  ONNXC_BUFFER_INPUT = 1,        /* index = input number */
  ONNXC_BUFFER_OUTPUT = 2,       /* index = output number */
  ONNXC_BUFFER_INTERMEDIATE = 3, /* placed in the arena by lifetime */
  ONNXC_BUFFER_CONSTANT = 4      /* data points into the artifact (pre-packed) */
} onnxc_buffer_kind;

typedef struct onnxc_buffer {
  int32_t kind; /* onnxc_buffer_kind */
  int32_t index;
  onnxc_dim_expr size_bytes;
  const void *constant_data;     /* ONNXC_BUFFER_CONSTANT only */
  int32_t first_step, last_step; /* lifetime, inclusive (intermediates) */
} onnxc_buffer;

/* A kernel processes tasks [task_begin, task_end) of its step. `buffers`
 * are the step's buffers in the order of onnxc_step.buffers; `symbols` the
 * bound symbol values. Kernels never allocate or block. They return 0, or
 * non-zero when the input data is invalid (an index out of range): the run
 * then fails with the step's name and `failure` message. */
typedef int32_t (*onnxc_kernel_fn)(void *const *buffers, const int64_t *symbols, int64_t task_begin,
                                   int64_t task_end);
/* Number of independent tasks of a step for the bound symbols (>= 0). */
typedef int64_t (*onnxc_task_count_fn)(const int64_t *symbols);

/* Steps run in order, except where a branch step says otherwise. A branch
 * step runs its kernel once, as task [0, 1) on the calling thread (its
 * task_count is NULL): a result of 0 goes on with the next step,
 * ONNXC_BRANCH_TAKEN with step `branch_target` (num_steps ends the run),
 * anything else fails the run as any kernel's error does. A compiled Loop
 * or Scan is a forward branch past its body (no iteration to run) and a
 * backward branch to the body's first step (one more iteration). */
typedef enum onnxc_step_kind {
  ONNXC_STEP_KERNEL = 0, /* zero, so a zero-filled step is an ordinary one */
  ONNXC_STEP_BRANCH = 1
} onnxc_step_kind;

#define ONNXC_BRANCH_TAKEN 2

typedef struct onnxc_step {
  const char *name; /* IR node(s) the step computes, for messages and profiles */
  onnxc_kernel_fn kernel;
  onnxc_task_count_fn task_count; /* NULL: one task */
  int32_t num_buffers;
  const int32_t *buffers; /* indices into onnxc_model_descriptor.buffers */
  const char *failure;    /* what a non-zero kernel result means; NULL if it never fails */
  int32_t kind;           /* onnxc_step_kind */
  int32_t branch_target;  /* ONNXC_STEP_BRANCH only: the step to continue at */
} onnxc_step;

/* A condition on the symbols that shape inference relied on without being
 * able to prove it (a dim broadcast against 4 is 1 or 4, a MatMul's
 * symbolic contraction dim equals the weight's, a Slice of a stored table
 * stays within it): `expr` == 0 or >= 0. The runtime checks every one when
 * it binds the inputs; a run whose inputs break one fails with `message`. */
typedef enum onnxc_assumption_kind {
  ONNXC_ASSUME_ZERO = 1,
  ONNXC_ASSUME_NONNEGATIVE = 2
} onnxc_assumption_kind;

typedef struct onnxc_assumption {
  onnxc_dim_expr expr;
  int32_t kind;        /* onnxc_assumption_kind */
  const char *message; /* "node 'mm': the matmul contraction dimension k must equal 4" */
} onnxc_assumption;

/* A KV cache the runtime may update in place (ABI v5): output `output`
 * ("present") is Concat(input `input` ("past"), new rows) along `axis`, or
 * (opset 24) TensorScatter(past, new rows, write positions), of the past's
 * shape, whose length on `axis` may then be a constant; and
 * the compiled code writes the present with the layout of a tensor whose dim
 * `axis` is symbol `capacity_symbol` (>= the present's length there), and
 * reads the past with that of one whose dim `axis` is `past_capacity_symbol`,
 * not with the bound lengths. With both set to one capacity, the caller may
 * pass one buffer as both the past's data and the present's: the model then
 * writes only the new rows, behind the past ones, and the present of a step
 * is the past of the next without a copy. With two different buffers the
 * model copies the past rows as before. Both symbols are the capacity of
 * onnxc_session_set_cache_capacity, else the past's and the present's own
 * lengths (the dense layouts of an ordinary run). */
typedef struct onnxc_cache_pair {
  int32_t input;                /* the past: an input index */
  int32_t output;               /* the present: an output index */
  int32_t axis;                 /* the sequence axis of both */
  int32_t capacity_symbol;      /* rows of the present's layout */
  int32_t past_capacity_symbol; /* rows of the past's layout */
} onnxc_cache_pair;

typedef struct onnxc_model_descriptor {
  uint32_t abi_version; /* ONNXC_ABI_VERSION */
  const char *model_name;
  int32_t num_symbols;
  const char *const *symbol_names;
  const onnxc_symbol_source *symbol_sources;
  int32_t num_inputs;
  const onnxc_tensor_info *inputs;
  int32_t num_outputs;
  const onnxc_tensor_info *outputs;
  int32_t num_buffers;
  const onnxc_buffer *buffers;
  int32_t num_steps;
  const onnxc_step *steps;
  int32_t num_assumptions;
  const onnxc_assumption *assumptions;
  int32_t num_cache_pairs; /* v5 */
  const onnxc_cache_pair *cache_pairs;
  /* v6: the arithmetic of the matrix products, "f32" or "bf16" (operands
   * rounded to bfloat16, sums in f32), and the CPU features beyond x86-64's
   * the code may use, comma-separated LLVM names ("avx,avx2,...,fma") or "":
   * every feature of the compile target the runtime can check
   * (onnxc_cpu_features_checked), so a session refuses to open on a CPU (or
   * an OS) without them instead of dying of SIGILL. */
  const char *precision;
  const char *cpu_features;
  /* v7: the version of onnxc that compiled the model ("0.1.0"), and per
   * input the values an integer input may hold where the model uses it to
   * index a table of constant size (a Gather of an embedding: the table's
   * rows, e.g. 2 for BERT's token_type_ids), an exclusive upper bound, or 0
   * where none is known. For tools that make up inputs (`onnxc bench`). */
  const char *onnxc_version;
  const int64_t *input_index_bounds;
} onnxc_model_descriptor;

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_MODEL_ABI_H */
