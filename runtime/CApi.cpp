//===- runtime/CApi.cpp - The C functions of onnxc.h and onnxc_generate.h --===//
//
// The boundary between C callers and the C++ runtime: no exception crosses
// it, and every failure becomes a message the caller can fetch.
//
//===----------------------------------------------------------------------===//
#include "Session.h"
#include "generate/Generator.h"
#include "onnxc/onnxc.h"
#include "onnxc/onnxc_generate.h"

#include <cstddef>
#include <cstring>
#include <exception>
#include <string>

struct onnxc_session {
  std::unique_ptr<onnxc::runtime::Session> impl;
};

struct onnxc_generator {
  std::unique_ptr<onnxc::runtime::Generator> impl;
};

namespace {

/// onnxc_session_create has no session to hold its error, so the message is
/// kept per thread, like errno.
thread_local std::string lastCreateError;

} // namespace

extern "C" {

onnxc_session *onnxc_session_create(const onnxc_model_descriptor *model, int num_threads) {
  try {
    std::string error;
    auto impl = onnxc::runtime::Session::create(model, num_threads, error);
    if (!impl) {
      lastCreateError = std::move(error);
      return nullptr;
    }
    lastCreateError.clear();
    return new onnxc_session{std::move(impl)};
  } catch (const std::bad_alloc &) {
    lastCreateError = "out of memory";
  } catch (const std::exception &exception) {
    // std::system_error when the OS refuses another thread.
    lastCreateError = std::string("cannot create the session: ") + exception.what();
  }
  return nullptr;
}

void onnxc_session_destroy(onnxc_session *session) { delete session; }

int onnxc_session_run(onnxc_session *session, const onnxc_tensor *inputs, int32_t num_inputs,
                      onnxc_tensor *outputs, int32_t num_outputs) {
  if (!session)
    return -1;
  return session->impl->run(inputs, num_inputs, outputs, num_outputs) ? 0 : 1;
}

const char *onnxc_session_error(const onnxc_session *session) {
  if (!session)
    return "the session is NULL";
  return session->impl->error().c_str();
}

const char *onnxc_last_error(void) { return lastCreateError.c_str(); }

size_t onnxc_session_arena_bytes(const onnxc_session *session) {
  return session ? session->impl->arenaBytes() : 0;
}

void onnxc_session_set_memory_limit(onnxc_session *session, size_t bytes) {
  if (session)
    session->impl->setMemoryLimit(bytes > size_t(INT64_MAX) ? INT64_MAX : int64_t(bytes));
}

int onnxc_session_set_cache_capacity(onnxc_session *session, int64_t capacity) {
  if (!session)
    return -1;
  return session->impl->setCacheCapacity(capacity) ? 0 : -1;
}

int32_t onnxc_session_cache_pair_of_input(const onnxc_session *session, int32_t input) {
  if (!session)
    return -1;
  const onnxc_model_descriptor &model = session->impl->model();
  for (int32_t p = 0; p < model.num_cache_pairs; ++p)
    if (model.cache_pairs[p].input == input)
      return model.cache_pairs[p].output;
  return -1;
}

void onnxc_session_set_profiling(onnxc_session *session, int enabled) {
  if (session)
    session->impl->setProfiling(enabled != 0);
}

int64_t onnxc_session_step_nanoseconds(const onnxc_session *session, int32_t step) {
  return session ? session->impl->stepNanoseconds(step) : 0;
}

//===----------------------------------------------------------------------===//
// onnxc_generate.h
//===----------------------------------------------------------------------===//

void onnxc_generate_options_init(onnxc_generate_options *options) {
  if (!options)
    return;
  *options = onnxc_generate_options{};
  options->max_new_tokens = 32;
  options->temperature = 1.0f;
  options->top_p = 1.0f;
  options->eos_token_id = -1;
  options->repetition_penalty = 1.0f;
  options->pad_token_id = -1;
  options->num_beams = 1;
  options->num_return_sequences = 1;
  options->length_penalty = 1.0f;
}

namespace {

onnxc_generator *createGenerator(const onnxc_model_descriptor *encoder,
                                 const onnxc_model_descriptor *model,
                                 const onnxc_generate_options *options) {
  try {
    onnxc_generate_options defaults;
    onnxc_generate_options_init(&defaults);
    std::string error;
    auto impl =
        onnxc::runtime::Generator::create(model, options ? *options : defaults, error, encoder);
    if (!impl) {
      lastCreateError = std::move(error);
      return nullptr;
    }
    lastCreateError.clear();
    return new onnxc_generator{std::move(impl)};
  } catch (const std::bad_alloc &) {
    lastCreateError = "out of memory";
  } catch (const std::exception &exception) {
    lastCreateError = std::string("cannot create the generator: ") + exception.what();
  }
  return nullptr;
}

} // namespace

onnxc_generator *onnxc_generator_create(const onnxc_model_descriptor *model,
                                        const onnxc_generate_options *options) {
  return createGenerator(nullptr, model, options);
}

onnxc_generator *onnxc_generator_create_seq2seq(const onnxc_model_descriptor *encoder,
                                                const onnxc_model_descriptor *decoder,
                                                const onnxc_generate_options *options) {
  if (!encoder) {
    lastCreateError = "the encoder is NULL";
    return nullptr;
  }
  return createGenerator(encoder, decoder, options);
}

//===----------------------------------------------------------------------===//
// Version 1 of onnxc_generate_options: the symbols a program built against
// the version-1 header calls. They read and write only that struct's fields,
// the first ones of version 2's (v1Prefix), and use the defaults for the rest.
//===----------------------------------------------------------------------===//

#undef onnxc_generate_options_init
#undef onnxc_generator_create
#undef onnxc_generator_create_seq2seq

namespace {

/// The bytes of version 1's struct: the fields up to `mapping`, padded as
/// that struct was (it ended with the pointer).
constexpr size_t v1Prefix = offsetof(onnxc_generate_options, mapping) + sizeof(const char *);

onnxc_generate_options fromV1(const void *options) {
  onnxc_generate_options full;
  onnxc_generate_options_init_v2(&full);
  std::memcpy(static_cast<void *>(&full), options, v1Prefix);
  return full;
}

} // namespace

extern "C" void onnxc_generate_options_init(void *options) {
  if (!options)
    return;
  onnxc_generate_options full;
  onnxc_generate_options_init_v2(&full);
  std::memcpy(options, static_cast<const void *>(&full), v1Prefix);
}

extern "C" onnxc_generator *onnxc_generator_create(const onnxc_model_descriptor *model,
                                                   const void *options) {
  if (!options)
    return createGenerator(nullptr, model, nullptr);
  onnxc_generate_options full = fromV1(options);
  return createGenerator(nullptr, model, &full);
}

extern "C" onnxc_generator *onnxc_generator_create_seq2seq(const onnxc_model_descriptor *encoder,
                                                           const onnxc_model_descriptor *decoder,
                                                           const void *options) {
  if (!options)
    return onnxc_generator_create_seq2seq_v2(encoder, decoder, nullptr);
  onnxc_generate_options full = fromV1(options);
  return onnxc_generator_create_seq2seq_v2(encoder, decoder, &full);
}

int onnxc_generator_encode(onnxc_generator *generator, const int64_t *source_ids, int64_t count) {
  if (!generator)
    return -1;
  // encode() turns a failed allocation into its error line.
  return generator->impl->encode(source_ids, count) ? 0 : -1;
}

void onnxc_generator_destroy(onnxc_generator *generator) { delete generator; }

int32_t onnxc_generator_mode(const onnxc_generator *generator) {
  return generator ? generator->impl->mode() : 0;
}

int32_t onnxc_generator_cache_pairs_in_place(const onnxc_generator *generator) {
  return generator ? generator->impl->pairsInPlace() : 0;
}

int32_t onnxc_generator_cache_pairs(const onnxc_generator *generator) {
  return generator ? generator->impl->cachePairs() : 0;
}

int32_t onnxc_generator_state_pairs(const onnxc_generator *generator) {
  return generator ? generator->impl->statePairs() : 0;
}

const char *onnxc_generator_describe(const onnxc_generator *generator) {
  return generator ? generator->impl->description().c_str() : "the generator is NULL";
}

int onnxc_generator_prefill(onnxc_generator *generator, const int64_t *prompt_ids, int64_t count) {
  if (!generator)
    return -1;
  try {
    return generator->impl->prefill(prompt_ids, count) ? 0 : -1;
  } catch (const std::bad_alloc &) {
    // Only growing the buffers to a larger prompt allocates.
    return -1;
  }
}

int onnxc_generator_next(onnxc_generator *generator, int64_t *token) {
  if (!generator)
    return -1;
  if (!token) {
    generator->impl->refuseCall("the token pointer is NULL");
    return -1;
  }
  return generator->impl->next(*token);
}

int64_t onnxc_generate(onnxc_generator *generator, const int64_t *prompt_ids, int64_t count,
                       int64_t *out, int64_t out_capacity) {
  if (!generator)
    return -1;
  if (out_capacity < 0) {
    generator->impl->refuseCall("out_capacity is " + std::to_string(out_capacity) +
                                "; it must be at least 0");
    return -1;
  }
  if (!out && out_capacity > 0) {
    generator->impl->refuseCall("out is NULL but out_capacity is " + std::to_string(out_capacity));
    return -1;
  }
  if (onnxc_generator_prefill(generator, prompt_ids, count) != 0)
    return -1;
  int64_t produced = 0, token = 0;
  while (produced < out_capacity) {
    int status = onnxc_generator_next(generator, &token);
    if (status < 0)
      return -1;
    if (status == 0)
      break;
    out[produced++] = token;
  }
  return produced;
}

int onnxc_generator_prefill_batch(onnxc_generator *generator, const int64_t *const *prompts,
                                  const int64_t *counts, int64_t rows) {
  if (!generator)
    return -1;
  try {
    return generator->impl->prefillBatch(prompts, counts, rows) ? 0 : -1;
  } catch (const std::bad_alloc &) {
    generator->impl->refuseCall("out of memory starting a batch of " + std::to_string(rows) +
                                " prompts");
    return -1;
  }
}

int onnxc_generator_next_batch(onnxc_generator *generator, int64_t *tokens, int32_t *produced) {
  if (!generator)
    return -1;
  if (!tokens || !produced) {
    generator->impl->refuseCall("next_batch: the tokens or produced array is NULL");
    return -1;
  }
  return generator->impl->nextBatch(tokens, produced);
}

int onnxc_generator_reserve_rows(onnxc_generator *generator, int64_t rows) {
  if (!generator)
    return -1;
  try {
    return generator->impl->reserveRows(rows) ? 0 : -1;
  } catch (const std::bad_alloc &) {
    generator->impl->refuseCall("out of memory reserving " + std::to_string(rows) + " rows");
    return -1;
  }
}

int64_t onnxc_generator_max_positions(const onnxc_generator *generator, int64_t up_to) {
  return generator ? generator->impl->maxPositions(up_to) : -1;
}

int onnxc_generator_joinable(onnxc_generator *generator) {
  if (!generator)
    return 0;
  std::string problem = generator->impl->joinProblem();
  return problem.empty() ? 1 : (generator->impl->refuseCall(std::move(problem)), 0);
}

int64_t onnxc_generator_add_row(onnxc_generator *generator, const int64_t *prompt_ids,
                                int64_t count, const onnxc_generate_options *row_options,
                                int64_t *first_token) {
  if (!generator)
    return -1;
  if (!first_token) {
    generator->impl->refuseCall("add_row: first_token is NULL");
    return -1;
  }
  try {
    if (!generator->impl->addRow(prompt_ids, count, row_options, *first_token))
      return -1;
    return generator->impl->rows() - 1;
  } catch (const std::bad_alloc &) {
    generator->impl->refuseCall("out of memory adding a row of " + std::to_string(count) +
                                " tokens");
    return -1;
  }
}

int64_t onnxc_generator_add_rows(onnxc_generator *generator, const int64_t *const *prompts,
                                 const int64_t *counts, int64_t count,
                                 const onnxc_generate_options *const *row_options,
                                 int64_t *first_tokens) {
  if (!generator)
    return -1;
  try {
    if (!generator->impl->addRows(prompts, counts, count, row_options, first_tokens))
      return -1;
    return generator->impl->rows() - count;
  } catch (const std::bad_alloc &) {
    generator->impl->refuseCall("out of memory adding " + std::to_string(count) + " rows");
    return -1;
  }
}

int onnxc_generator_remove_row(onnxc_generator *generator, int64_t row) {
  if (!generator)
    return -1;
  return generator->impl->removeRow(row) ? 0 : -1;
}

int64_t onnxc_generator_rows(const onnxc_generator *generator) {
  return generator ? generator->impl->rows() : 0;
}

int64_t onnxc_generator_beam_search(onnxc_generator *generator, const int64_t *prompt_ids,
                                    int64_t count) {
  if (!generator)
    return -1;
  try {
    if (!generator->impl->beamSearch(prompt_ids, count))
      return -1;
  } catch (const std::bad_alloc &) {
    generator->impl->refuseCall("out of memory during the beam search");
    return -1;
  }
  return int64_t(generator->impl->sequences().size());
}

int64_t onnxc_generator_sequence(onnxc_generator *generator, int64_t index, const int64_t **tokens,
                                 float *score) {
  if (!generator)
    return -1;
  const auto &sequences = generator->impl->sequences();
  if (index < 0 || index >= int64_t(sequences.size())) {
    generator->impl->refuseCall("sequence " + std::to_string(index) +
                                " does not exist; the last "
                                "beam search found " +
                                std::to_string(sequences.size()));
    return -1;
  }
  const auto &sequence = sequences[size_t(index)];
  if (tokens)
    *tokens = sequence.tokens.data();
  if (score)
    *score = float(sequence.score);
  return int64_t(sequence.tokens.size());
}

int onnxc_generator_logprob(onnxc_generator *generator, int64_t row, float *logprob) {
  if (!generator)
    return -1;
  if (!logprob) {
    generator->impl->refuseCall("the logprob pointer is NULL");
    return -1;
  }
  return generator->impl->logprob(row, *logprob) ? 0 : -1;
}

int32_t onnxc_generator_top_logprobs(onnxc_generator *generator, int64_t row, int64_t *ids,
                                     float *logprobs, int32_t room) {
  if (!generator)
    return -1;
  return generator->impl->topLogprobs(row, ids, logprobs, room);
}

int64_t onnxc_generator_capacity(const onnxc_generator *generator) {
  return generator ? generator->impl->capacity() : 0;
}

const char *onnxc_generator_error(const onnxc_generator *generator) {
  return generator ? generator->impl->error().c_str() : "the generator is NULL";
}

} // extern "C"
