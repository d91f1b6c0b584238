//===- python/src/Generate.cpp - Model.generate over the runtime's generator ===//
#include "python/src/Generate.h"

#include "ir/Error.h"
#include "python/src/ModelRunner.h"

#include <memory>

namespace onnxc::python {

namespace {

struct GeneratorDeleter {
  void operator()(onnxc_generator *generator) const { onnxc_generator_destroy(generator); }
};

/// Appends row `row`'s log-probabilities of the last step to `result`.
void keepLogprobs(onnxc_generator *generator, int64_t row, int32_t top, GenerateResult &result) {
  float logprob = 0;
  if (onnxc_generator_logprob(generator, row, &logprob) != 0)
    fail(onnxc_generator_error(generator));
  result.logprobs[size_t(row)].push_back(logprob);
  std::vector<int64_t> ids(static_cast<size_t>(top));
  std::vector<float> values(static_cast<size_t>(top));
  int32_t count = onnxc_generator_top_logprobs(generator, row, ids.data(), values.data(), top);
  std::vector<std::pair<int64_t, float>> alternatives;
  for (int32_t i = 0; i < count; ++i)
    alternatives.emplace_back(ids[size_t(i)], values[size_t(i)]);
  result.topLogprobs[size_t(row)].push_back(std::move(alternatives));
}

void runBeams(onnxc_generator *generator, const std::vector<int64_t> &prompt,
              GenerateResult &result) {
  int64_t found = onnxc_generator_beam_search(generator, prompt.data(), int64_t(prompt.size()));
  if (found < 0)
    fail(onnxc_generator_error(generator));
  for (int64_t i = 0; i < found; ++i) {
    const int64_t *tokens = nullptr;
    float score = 0;
    int64_t count = onnxc_generator_sequence(generator, i, &tokens, &score);
    result.rows.emplace_back(tokens, tokens + count);
    result.scores.push_back(score);
  }
}

void runRows(onnxc_generator *generator, const std::vector<std::vector<int64_t>> &prompts,
             const onnxc_generate_options &options, const std::function<void(int64_t)> &onToken,
             GenerateResult &result) {
  size_t rows = prompts.size();
  std::vector<const int64_t *> starts;
  std::vector<int64_t> counts;
  for (const std::vector<int64_t> &prompt : prompts) {
    starts.push_back(prompt.data());
    counts.push_back(int64_t(prompt.size()));
  }
  if (onnxc_generator_prefill_batch(generator, starts.data(), counts.data(), int64_t(rows)) != 0)
    fail(onnxc_generator_error(generator));
  result.rows.resize(rows);
  result.logprobs.resize(options.logprobs ? rows : 0);
  result.topLogprobs.resize(options.logprobs ? rows : 0);
  std::vector<int64_t> tokens(rows);
  std::vector<int32_t> produced(rows);
  size_t total = 0;
  while (true) {
    int status = onnxc_generator_next_batch(generator, tokens.data(), produced.data());
    if (status < 0)
      fail("after ", total, " tokens: ", onnxc_generator_error(generator));
    if (status == 0)
      break;
    for (size_t r = 0; r < rows; ++r) {
      if (!produced[r])
        continue;
      result.rows[r].push_back(tokens[r]);
      ++total;
      if (options.logprobs)
        keepLogprobs(generator, int64_t(r), options.top_logprobs, result);
      if (onToken)
        onToken(tokens[r]);
    }
  }
}

} // namespace

GenerateResult generateTokens(const ModelRunner &runner,
                              const std::vector<std::vector<int64_t>> &prompts,
                              const onnxc_generate_options &options,
                              const std::function<void(int64_t)> &onToken,
                              const ModelRunner *encoder, const std::vector<int64_t> &source) {
  std::unique_ptr<onnxc_generator, GeneratorDeleter> generator(
      encoder
          ? onnxc_generator_create_seq2seq(&encoder->descriptor(), &runner.descriptor(), &options)
          : onnxc_generator_create(&runner.descriptor(), &options));
  if (!generator)
    fail(onnxc_last_error());
  GenerateResult result;
  result.mode = onnxc_generator_mode(generator.get());
  result.description = onnxc_generator_describe(generator.get());
  if (encoder &&
      onnxc_generator_encode(generator.get(), source.data(), int64_t(source.size())) != 0)
    fail(onnxc_generator_error(generator.get()));
  if (options.num_beams > 1 && prompts.size() == 1)
    runBeams(generator.get(), prompts[0], result);
  else
    runRows(generator.get(), prompts, options, onToken, result);
  return result;
}

} // namespace onnxc::python
