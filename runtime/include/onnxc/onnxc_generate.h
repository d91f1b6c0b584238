/*===- runtime/include/onnxc/onnxc_generate.h - Token generation over a model ===*
 *
 * A generator runs a compiled decoder (GPT-style: token ids in, logits out)
 * in a loop: the prompt once (prefill), then one step per new token.
 *
 *   onnxc_generate_options options;
 *   onnxc_generate_options_init(&options);
 *   options.max_new_tokens = 32;
 *   onnxc_generator *g = onnxc_generator_create(onnxc_descriptor(), &options);
 *   if (!g) { puts(onnxc_last_error()); return 1; }
 *   int64_t prompt[3] = {464, 3290, 318}, token;
 *   if (onnxc_generator_prefill(g, prompt, 3) != 0) puts(onnxc_generator_error(g));
 *   int status;
 *   while ((status = onnxc_generator_next(g, &token)) == 1)
 *     printf("%lld\n", (long long)token);
 *   if (status < 0) puts(onnxc_generator_error(g));
 *   onnxc_generator_destroy(g);
 *
 * Roles come from the model's names and shapes: the token ids input
 * (`input_ids`, else the one rank-2 integer input that is no mask or
 * position), `attention_mask` (a name with "mask"; filled with ones),
 * `position_ids` (a name with "position"; the new tokens' positions), the logits
 * output (a name with "logits", else the one float output of rank 2 or 3 that
 * is not a cache), and cache pairs: the pairs the model declares
 * (onnxc_cache_pair, proved by the compiler), and for the other inputs, an
 * input whose name has "past" (past_key_values.0.key, past_key_0, past_key,
 * past0, ...) pairs with the output named the same with "present" in place
 * of the "past..." prefix (present.0.key, present_key_0, present_key,
 * present0). A model with cache
 * inputs runs in KV-cache mode; one without re-runs the whole sequence at
 * every step (ONNXC_GENERATE_FULL_SEQUENCE). `mapping` overrides the guesses.
 *
 * The cache lives in buffers the generator owns, preallocated to `capacity`
 * positions. A pair the model declares in place (onnxc_cache_pair: its
 * present is the past followed by the new positions, and the compiled code
 * addresses both with the capacity's layout) has one buffer, bound as both
 * `past` and `present`: a step writes only the new positions and copies no
 * cache. Any other pair has two: a step reads `past` from one and the session
 * writes `present` straight into the other (the graph's Concat of past and
 * new keys copying the cache), and the two swap. No step allocates.
 * Batch 1 only.
 *
 * Encoder-decoder models (BART, T5, the 2017 Transformer) come as two
 * compiled models: onnxc_generator_create_seq2seq takes the encoder too, and
 * onnxc_generator_encode runs it once per source. Its outputs stay bound as
 * the decoder's context inputs for every step until the next encode: a
 * decoder input named like an encoder output (optimum's cross-attention
 * cache past_key_values.N.encoder.key, ...), the hidden states (an input
 * with "encoder_hidden_states", "encoder_outputs" or named "memory" takes
 * last_hidden_state, else the encoder's one float rank-3 output) and the
 * source mask (an input with "mask" and "encoder", "source", "src" or
 * "memory": ones of the source length). `mapping` may name them:
 * NAME=encoder:OUTPUT, NAME=source_mask. The prompt of prefill is then the
 * decoder's start (e.g. BART's decoder_start_token_id).
 *
 * Every function returning int returns 0 (or 1, see next) on success and -1
 * on failure, with onnxc_generator_error() set to one line.
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_ONNXC_GENERATE_H
#define ONNXC_ONNXC_GENERATE_H

#include "onnxc/onnxc.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct onnxc_generate_options {
  int64_t max_new_tokens; /* tokens next() produces at most (default 32) */
  /* Positions the cache (or the re-run sequence) holds: prompt plus
   * generated tokens. 0 (default): prompt + max_new_tokens, allocated at
   * prefill. Non-zero: allocated at create; a prompt or a generation that
   * needs more fails naming the capacity. */
  int64_t capacity;
  int32_t do_sample; /* 0 (default): greedy (argmax, the lowest id on ties) */
  float temperature; /* sampling only; default 1; <= 0 means greedy */
  int32_t top_k;     /* sampling only; keep the k most likely ids; 0 (default): all */
  float top_p;       /* sampling only; keep the smallest most-likely set with mass >= p; 1: all */
  uint64_t seed;     /* the sampler's seed (xoshiro256**, seeded by splitmix64) */
  int64_t eos_token_id; /* stop after producing this id; -1 (default): none */
  int32_t num_threads;  /* the session's threads; 0 (default): one per core */
  /* Overrides of the guessed roles, NULL or "" for none: comma-separated
   * ROLE=NAME with ROLE one of input_ids, attention_mask, position_ids
   * (the input named NAME; an empty NAME: the model has none), logits (the
   * output), or a cache input's name (NAME: its present output); with an
   * encoder, a decoder input's name = encoder:OUTPUT or source_mask. */
  const char *mapping;
} onnxc_generate_options;

typedef enum onnxc_generate_mode {
  ONNXC_GENERATE_KV_CACHE = 1,     /* past inputs fed from the previous present outputs */
  ONNXC_GENERATE_FULL_SEQUENCE = 2 /* no cache: every step runs the whole sequence */
} onnxc_generate_mode;

typedef struct onnxc_generator onnxc_generator;

/* Fills in the defaults above. */
void onnxc_generate_options_init(onnxc_generate_options *options);

/* Creates a generator (and its session) for a compiled model; options NULL
 * means the defaults. Returns NULL on failure with onnxc_last_error() set:
 * no logits output, a cache input without a matching output, a mapping that
 * names no input... The model must outlive the generator. */
onnxc_generator *onnxc_generator_create(const onnxc_model_descriptor *model,
                                        const onnxc_generate_options *options);
/* An encoder-decoder generator: `encoder` maps source ids (and a mask of
 * ones) to the tensors the decoder's context inputs read; call encode before
 * prefill. Both models must outlive the generator. */
onnxc_generator *onnxc_generator_create_seq2seq(const onnxc_model_descriptor *encoder,
                                                const onnxc_model_descriptor *decoder,
                                                const onnxc_generate_options *options);
void onnxc_generator_destroy(onnxc_generator *generator);

/* ONNXC_GENERATE_KV_CACHE or ONNXC_GENERATE_FULL_SEQUENCE. */
int32_t onnxc_generator_mode(const onnxc_generator *generator);
/* One line describing the roles found, e.g. "kv-cache: ids 'input_ids',
 * mask 'attention_mask', logits 'logits', 4 cache pairs, updated in place". */
const char *onnxc_generator_describe(const onnxc_generator *generator);
/* How many cache pairs the generator updates in place: one buffer bound as
 * both past and present (the model declares the pair, onnxc_cache_pair), a
 * step writing only the new positions. The other pairs swap two buffers, the
 * model copying the cache into the present at every step. */
int32_t onnxc_generator_cache_pairs_in_place(const onnxc_generator *generator);

/* Starts a generation: empties the cache and runs the prompt. */
int onnxc_generator_prefill(onnxc_generator *generator, const int64_t *prompt_ids, int64_t count);

/* Encoder-decoder only: runs the encoder on the source ids and keeps its
 * outputs for the decoder; ends a generation under way. */
int onnxc_generator_encode(onnxc_generator *generator, const int64_t *source_ids, int64_t count);

/* The next token: the first call after prefill samples from the prompt's
 * logits, each later call runs one step on the previous token first.
 * Returns 1 with *token set; 0 when the generation has ended (the previous
 * token was eos_token_id, or max_new_tokens were produced); -1 on error
 * (the sequence would exceed the capacity, a failed run). */
int onnxc_generator_next(onnxc_generator *generator, int64_t *token);

/* prefill + next until the end: writes at most out_capacity tokens to out
 * and returns their number, or -1 on error. */
int64_t onnxc_generate(onnxc_generator *generator, const int64_t *prompt_ids, int64_t count,
                       int64_t *out, int64_t out_capacity);

/* Positions the buffers hold now (0 before the first prefill when the
 * capacity comes from the prompt). */
int64_t onnxc_generator_capacity(const onnxc_generator *generator);

const char *onnxc_generator_error(const onnxc_generator *generator);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_ONNXC_GENERATE_H */
