//===- tools/onnxc/GenerateSearch.cpp - onnxc generate's search options and batches -===//
#include "tools/onnxc/GenerateSearch.h"

#include "ir/Error.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace onnxc {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string formatFloat(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

} // namespace

/// Up to 10^18 in magnitude.
int64_t integerArgument(const std::string &text, const std::string &option, int64_t minimum) {
  bool negative = !text.empty() && text[0] == '-';
  std::string digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("--" + option + " needs an integer, got '" + text + "'");
  if (digits.size() > 18)
    throw UsageError("--" + option + " " + text + " is beyond the limit of 10^18 in magnitude");
  int64_t value = std::stoll(digits) * (negative ? -1 : 1);
  if (value < minimum)
    throw UsageError("--" + option + " must be at least " + std::to_string(minimum) + ", got " +
                     text);
  return value;
}

float floatArgument(const ParsedArgs &args, const std::string &option, float fallback) {
  if (!args.has(option))
    return fallback;
  std::string text = args.get(option);
  size_t used = 0;
  float value = 0;
  try {
    value = std::stof(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value))
    throw UsageError("--" + option + " needs a number, got '" + text + "'");
  return value;
}

std::vector<int64_t> idListText(const std::string &text, const std::string &option) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ids.push_back(integerArgument(item, option, 0));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
  }
  return ids;
}

void readSearchOptions(const ParsedArgs &args, bool sampling,
                       const std::vector<int64_t> &genaiStops, onnxc_generate_options &options,
                       std::vector<int64_t> &stopIds) {
  if (args.has("min-p") && !sampling)
    throw UsageError("--min-p applies to sampling; add --sample");
  options.repetition_penalty = floatArgument(args, "repetition-penalty", 1.0f);
  options.presence_penalty = floatArgument(args, "presence-penalty", 0.0f);
  options.frequency_penalty = floatArgument(args, "frequency-penalty", 0.0f);
  options.min_p = floatArgument(args, "min-p", 0.0f);
  options.min_new_tokens = integerArgument(args.get("min-new-tokens", "0"), "min-new-tokens", 0);
  // --eos-id takes a list (generation_config.json's eos_token_id often is one).
  stopIds = genaiStops;
  if (args.has("eos-id"))
    stopIds = args.get("eos-id") == "-1" ? std::vector<int64_t>() // none, as before lists
                                         : idListText(args.get("eos-id"), "eos-id");
  options.eos_token_id = -1;
  options.eos_token_ids = stopIds.data();
  options.num_eos_token_ids = int32_t(stopIds.size());
  options.pad_token_id = integerArgument(args.get("pad-id", "-1"), "pad-id", -1);
  options.top_logprobs = int32_t(integerArgument(args.get("top-logprobs", "0"), "top-logprobs", 0));
  options.logprobs = args.has("logprobs") || options.top_logprobs > 0 ? 1 : 0;
  options.num_beams = int32_t(integerArgument(args.get("num-beams", "1"), "num-beams", 1));
  options.num_return_sequences =
      int32_t(integerArgument(args.get("num-return-sequences", "1"), "num-return-sequences", 1));
  options.length_penalty = floatArgument(args, "length-penalty", 1.0f);
  std::string early = args.get("early-stopping", "false");
  if (early != "true" && early != "false" && early != "never")
    throw UsageError("--early-stopping takes true, false or never, got '" + early + "'");
  options.early_stopping = early == "true" ? 1 : early == "never" ? -1 : 0;
  bool beamOption =
      args.has("num-return-sequences") || args.has("length-penalty") || args.has("early-stopping");
  if (beamOption && options.num_beams < 2)
    throw UsageError("--num-return-sequences, --length-penalty and --early-stopping apply to "
                     "beam search; add --num-beams N (N >= 2)");
}

std::vector<OptionSpec> searchOptionSpecs() {
  return {
      {"prompt-ids-file", "FILE",
       "a batch: one prompt per line (comma-separated ids), generated together; with "
       "--prompt-ids given several times, those too"},
      {"repetition-penalty", "F",
       "HF repetition_penalty: divide positive logits (multiply negative ones) of ids already "
       "in the prompt or output by F (default 1: none)"},
      {"presence-penalty", "F", "OpenAI presence_penalty in [-2, 2] (default 0)"},
      {"frequency-penalty", "F", "OpenAI frequency_penalty in [-2, 2] (default 0)"},
      {"min-p", "P", "sampling: drop ids less likely than P times the most likely (default 0)"},
      {"min-new-tokens", "N", "mask the stop ids until N tokens are generated (default 0)"},
      {"pad-id", "N", "the id padding shorter prompts and fed to finished rows (default 0)"},
      {"logprobs", "", "print each token's log-probability (a line after the ids)"},
      {"top-logprobs", "N", "with the log-probabilities, the N most likely ids' too"},
      {"num-beams", "N", "beam search with N beams (default 1: greedy or sampling)"},
      {"num-return-sequences", "N", "beam search: print the N best sequences (default 1)"},
      {"length-penalty", "F", "beam search: score = sum of log-probabilities / length^F (1)"},
      {"early-stopping", "WHEN", "beam search: true, false (default) or never, as HF's"},
  };
}

std::vector<std::vector<int64_t>> promptFileRows(const ParsedArgs &args) {
  std::vector<std::vector<int64_t>> rows;
  if (!args.has("prompt-ids-file"))
    return rows;
  std::string path = args.get("prompt-ids-file");
  std::ifstream file(path);
  if (!file)
    fail(path, ": cannot open the prompt file");
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty())
      continue;
    rows.push_back(idListText(line, "prompt-ids-file line " + std::to_string(number)));
  }
  if (rows.empty())
    fail(path, ": the prompt file has no prompts");
  return rows;
}

std::string logprobText(onnxc_generator *generator, int64_t row, int32_t top) {
  float logprob = 0;
  if (onnxc_generator_logprob(generator, row, &logprob) != 0)
    fail(onnxc_generator_error(generator));
  std::string text = formatFloat(logprob);
  std::vector<int64_t> ids(size_t(std::max(top, 0)));
  std::vector<float> values(ids.size());
  int32_t count =
      onnxc_generator_top_logprobs(generator, row, ids.data(), values.data(), int32_t(ids.size()));
  for (int32_t i = 0; i < count; ++i)
    text += " " + std::to_string(ids[size_t(i)]) + ":" + formatFloat(values[size_t(i)]);
  return text;
}

void generateBatch(onnxc_generator *generator, const std::vector<std::vector<int64_t>> &prompts,
                   const std::string &path, bool logprobs, bool bench) {
  size_t rows = prompts.size();
  std::vector<const int64_t *> starts;
  std::vector<int64_t> counts;
  for (const std::vector<int64_t> &prompt : prompts) {
    starts.push_back(prompt.data());
    counts.push_back(int64_t(prompt.size()));
  }
  Clock::time_point start = Clock::now();
  if (onnxc_generator_prefill_batch(generator, starts.data(), counts.data(), int64_t(rows)) != 0)
    fail(path, ": ", onnxc_generator_error(generator));
  std::vector<std::vector<int64_t>> outputs(rows);
  std::vector<std::vector<std::string>> scores(rows);
  std::vector<int64_t> tokens(rows);
  std::vector<int32_t> produced(rows);
  size_t total = 0;
  while (true) {
    int status = onnxc_generator_next_batch(generator, tokens.data(), produced.data());
    if (status < 0)
      fail(path, ": after ", total, " tokens: ", onnxc_generator_error(generator));
    if (status == 0)
      break;
    for (size_t r = 0; r < rows; ++r) {
      if (!produced[r])
        continue;
      outputs[r].push_back(tokens[r]);
      ++total;
      if (logprobs)
        scores[r].push_back(logprobText(generator, int64_t(r), 0));
    }
  }
  double seconds = secondsSince(start);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < outputs[r].size(); ++i)
      std::cout << (i ? "," : "") << outputs[r][i];
    std::cout << "\n";
    for (size_t i = 0; logprobs && i < scores[r].size(); ++i)
      std::cout << (i ? "," : "") << scores[r][i] << (i + 1 == scores[r].size() ? "\n" : "");
  }
  if (bench)
    std::cerr << "batch of " << rows << " prompts: " << total << " tokens in "
              << formatFloat(seconds * 1e3) << " ms, " << formatFloat(double(total) / seconds)
              << " tokens/s\n";
}

void generateBeams(onnxc_generator *generator, const std::vector<int64_t> &prompt,
                   const std::string &path, bool bench) {
  Clock::time_point start = Clock::now();
  int64_t found = onnxc_generator_beam_search(generator, prompt.data(), int64_t(prompt.size()));
  if (found < 0)
    fail(path, ": ", onnxc_generator_error(generator));
  double seconds = secondsSince(start);
  int64_t longest = 0;
  for (int64_t i = 0; i < found; ++i) {
    const int64_t *tokens = nullptr;
    float score = 0;
    int64_t count = onnxc_generator_sequence(generator, i, &tokens, &score);
    longest = std::max(longest, count);
    for (int64_t t = 0; t < count; ++t)
      std::cout << (t ? "," : "") << tokens[t];
    std::cout << "\n";
    std::cerr << "sequence " << i << ": score " << formatFloat(score) << "\n";
  }
  if (bench)
    std::cerr << "beam search: " << formatFloat(seconds * 1e3) << " ms for up to " << longest
              << " steps, " << formatFloat(seconds * 1e3 / double(std::max<int64_t>(longest, 1)))
              << " ms per step (prefill included)\n";
}

} // namespace onnxc
