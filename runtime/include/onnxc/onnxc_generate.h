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
 * new keys copying the cache), and the two swap. No step allocates. A batch
 * of prompts (prefill_batch) or of beams holds its rows in the same buffers.
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

  /* Version 2 (ONNXC_GENERATE_OPTIONS_VERSION): the fields below were
   * appended. The functions that take the struct are versioned (the _v2
   * names below, which this header's names map to), so a program built
   * against the version-1 header keeps calling the version-1 symbols, which
   * read and write only the fields above, with a newer model.so. Processors
   * apply in HF transformers' order: repetition_penalty, the OpenAI
   * penalties, min_new_tokens, then temperature, top_k, top_p, min_p. */
  float repetition_penalty; /* HF's: a positive logit / penalty, a negative one * penalty, for
                               each id in the prompt or the output; > 0; 1 (default): none */
  float presence_penalty;   /* OpenAI's: logit -= presence for each id generated at least once;
                               [-2, 2]; 0 (default): none */
  float frequency_penalty;  /* OpenAI's: logit -= frequency * times the id was generated;
                               [-2, 2]; 0 (default): none */
  float min_p;              /* sampling only: drop ids less likely than min_p times the most
                               likely (HF min_p); 0 (default): none */
  int64_t min_new_tokens;   /* the stop ids are masked until this many are generated (0) */
  /* More stop ids (generation_config.json's eos_token_id list): a row ends after
   * producing any of them or eos_token_id. NULL/0 (default): none. The array
   * is read at create only. */
  const int64_t *eos_token_ids;
  int32_t num_eos_token_ids;
  int32_t logprobs;     /* non-zero: keep each token's log-probability (onnxc_generator_logprob) */
  int32_t top_logprobs; /* per token also the N most likely ids' (0: none; implies logprobs) */
  /* The id a batch pads its shorter prompts with (masked out) and feeds its
   * finished rows; -1 (default): 0. */
  int64_t pad_token_id;
  /* Beam search (onnxc_generator_beam_search), as HF transformers 4.40's
   * BeamSearchScorer: */
  int32_t num_beams;            /* beams (rows of the batch); 1 (default): greedy */
  int32_t num_return_sequences; /* the best sequences kept, 1..num_beams (default 1) */
  float length_penalty;         /* score = sum of log-probabilities / length^penalty (1) */
  int32_t early_stopping;       /* HF early_stopping: 1 True, 0 False (default), -1 "never" */
} onnxc_generate_options;

#define ONNXC_GENERATE_OPTIONS_VERSION 2

typedef enum onnxc_generate_mode {
  ONNXC_GENERATE_KV_CACHE = 1,     /* past inputs fed from the previous present outputs */
  ONNXC_GENERATE_FULL_SEQUENCE = 2 /* no cache: every step runs the whole sequence */
} onnxc_generate_mode;

typedef struct onnxc_generator onnxc_generator;

/* The functions that take onnxc_generate_options, by version: a program
 * calls the names below and links the version of the header it was built
 * with. */
#define onnxc_generate_options_init onnxc_generate_options_init_v2
#define onnxc_generator_create onnxc_generator_create_v2
#define onnxc_generator_create_seq2seq onnxc_generator_create_seq2seq_v2

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
/* How many past/present pairs the generator feeds back (KV caches and states). */
int32_t onnxc_generator_cache_pairs(const onnxc_generator *generator);
/* How many of the pairs are recurrent states (LinearAttention's, a causal
 * convolution's): fed back whole at every step, not grown by positions. */
int32_t onnxc_generator_state_pairs(const onnxc_generator *generator);

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

/* Several prompts at once: `rows` prompts (prompts[r] holds counts[r] ids),
 * of different lengths when the model has an attention mask and position
 * ids (left padding with mask 0 and positions counted from each row's first
 * token, as HF pads decoder-only models); without them the prompts must have
 * one length. Each row has the cache rows of its own, samples as it would
 * alone under the seed, and stops at its own stop id. With a KV cache,
 * prompts of lengths far apart run unpadded in groups of similar lengths,
 * their caches copied into the batch's rows (docs/GENERATE.md). Replaces
 * prefill. */
int onnxc_generator_prefill_batch(onnxc_generator *generator, const int64_t *const *prompts,
                                  const int64_t *counts, int64_t rows);
/* One step of every row: tokens[r] is row r's next id and produced[r] 1, or
 * -1 and 0 for a row that has ended (it feeds the pad id from then on).
 * Returns 1 while some row produced, 0 when all have ended, -1 on error. */
int onnxc_generator_next_batch(onnxc_generator *generator, int64_t *tokens, int32_t *produced);
/* The rows of the generation under way (1 after prefill). */
int64_t onnxc_generator_rows(const onnxc_generator *generator);

/* Continuous batching (a server's loop): rows join the batch under way
 * between two next_batch calls and leave it, each with cache rows of its
 * own, the others untouched. The model needs a KV cache whose inputs lead
 * with the batch, an attention mask and position ids (a row joins behind
 * left padding), and the generator the capacity option; joinable() says so.
 *
 * reserve_rows allocates the buffers for `rows` rows at the capacity; call
 * it once, before the first row. add_row starts a generation with its
 * prompt or joins the one under way: the prompt runs alone, its cache rows
 * are copied into the batch, and *first_token gets the row's first token
 * (a stop id or a max_new_tokens of 1 ends the row at once; the caller
 * removes it). row_options (NULL: the generator's) gives the row its own
 * max_new_tokens, do_sample, temperature, top_k, top_p, min_p and seed; the
 * other fields are the generator's. Returns the new row's index (the last),
 * or -1. remove_row takes a row out; the last row takes its index. */
int onnxc_generator_reserve_rows(onnxc_generator *generator, int64_t rows);
/* The most positions (prompt and generated tokens, up to up_to) a
 * generation of this model can hold: its graph may bound the sequence (GPT-2's
 * position table). A server sizes the capacity option with it. */
int64_t onnxc_generator_max_positions(const onnxc_generator *generator, int64_t up_to);
/* 1 when rows can join a running batch; 0 with onnxc_generator_error() saying why. */
int onnxc_generator_joinable(onnxc_generator *generator);
int64_t onnxc_generator_add_row(onnxc_generator *generator, const int64_t *prompt_ids,
                                int64_t count, const onnxc_generate_options *row_options,
                                int64_t *first_token);
/* Several prompts joining at once run together (4 at a time), left-padded
 * among themselves: prompts[j] holds counts[j] ids, row_options NULL (the
 * generator's) or one pointer per prompt (each may be NULL), first_tokens
 * gets each row's first token. The new rows are the last `count`; returns
 * the first one's index, or -1. */
int64_t onnxc_generator_add_rows(onnxc_generator *generator, const int64_t *const *prompts,
                                 const int64_t *counts, int64_t count,
                                 const onnxc_generate_options *const *row_options,
                                 int64_t *first_tokens);
int onnxc_generator_remove_row(onnxc_generator *generator, int64_t row);

/* Beam search with options.num_beams (>= 2) beams on one prompt, to the
 * end: the beams are rows of the batch and the cache rows are reordered in
 * place after each step. Returns the number of sequences found
 * (num_return_sequences), or -1. */
int64_t onnxc_generator_beam_search(onnxc_generator *generator, const int64_t *prompt_ids,
                                    int64_t count);
/* Sequence `index` of the last beam search, best first: points *tokens at
 * its generated ids (a stop id that ended it included; valid until the next
 * call on the generator), sets *score (sum of log-probabilities /
 * length^length_penalty) and returns the number of ids, or -1. */
int64_t onnxc_generator_sequence(onnxc_generator *generator, int64_t index, const int64_t **tokens,
                                 float *score);

/* The log-probability of the token the last next() (next_batch: row `row`;
 * next: row 0) returned: the
 * log-softmax of the scores it was chosen from (the processed logits for
 * greedy, the distribution after the warpers when sampling). Needs the
 * logprobs or top_logprobs option; -1 with the error set otherwise. */
int onnxc_generator_logprob(onnxc_generator *generator, int64_t row, float *logprob);
/* The top_logprobs most likely ids of that step, most likely first, with
 * their log-probabilities: writes at most `room` and returns their number
 * (-1 on error). */
int32_t onnxc_generator_top_logprobs(onnxc_generator *generator, int64_t row, int64_t *ids,
                                     float *logprobs, int32_t room);

/* Positions the buffers hold now (0 before the first prefill when the
 * capacity comes from the prompt). */
int64_t onnxc_generator_capacity(const onnxc_generator *generator);

const char *onnxc_generator_error(const onnxc_generator *generator);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_ONNXC_GENERATE_H */
