//===- text/TextGeneration.cpp - Text in, text out over a generator ----------===//
#include "text/TextGeneration.h"

#include "ir/Error.h"
#include "text/DecodeStream.h"
#include "text/StopStrings.h"

#include <cstdint>
#include <memory>

namespace onnxc::text {
namespace {

/// One row under way: its ids, its stream of text and its stop strings.
struct RowState {
  RowState(const Tokenizer &tokenizer, const TextRequest &request)
      : stream(tokenizer, request.skipSpecialTokens), stops(request.stops) {}
  DecodeStream stream;
  StopStrings stops;
  TextRow row;
  bool done = false;
};

class Loop {
public:
  Loop(const Tokenizer &tokenizer, onnxc_generator *generator, const onnxc_text_generation_api &api,
       const TextRequest &request)
      : tokenizer_(tokenizer), generator_(generator), api_(api), request_(request) {}

  std::vector<TextRow> run(const std::vector<std::string_view> &prompts);

private:
  [[noreturn]] void generatorFailed(const char *when) const {
    const char *error = api_.error ? api_.error(generator_) : nullptr;
    fail(when, error && *error ? error : "the generator failed (no message)");
  }
  void prefill();
  bool step();
  void take(size_t r, int64_t token);
  void hand(size_t r, const std::string &piece) {
    if (!piece.empty() && request_.onText && !aborted_)
      aborted_ = request_.onText(int64_t(r), piece);
  }

  const Tokenizer &tokenizer_;
  onnxc_generator *generator_;
  const onnxc_text_generation_api &api_;
  const TextRequest &request_;
  std::vector<std::unique_ptr<RowState>> rows_;
  size_t generated_ = 0;
  bool aborted_ = false;
};

void Loop::prefill() {
  if (rows_.size() == 1) {
    const std::vector<int64_t> &ids = rows_[0]->row.promptIds;
    if (api_.prefill(generator_, ids.data(), int64_t(ids.size())) != 0)
      generatorFailed("");
    return;
  }
  std::vector<const int64_t *> starts;
  std::vector<int64_t> counts;
  for (const std::unique_ptr<RowState> &row : rows_) {
    starts.push_back(row->row.promptIds.data());
    counts.push_back(int64_t(row->row.promptIds.size()));
  }
  if (api_.prefill_batch(generator_, starts.data(), counts.data(), int64_t(rows_.size())) != 0)
    generatorFailed("");
}

/// One token of every row; false when the generation is over.
bool Loop::step() {
  std::string after = "after " + std::to_string(generated_) + " tokens: ";
  if (rows_.size() == 1) {
    int64_t token = 0;
    int status = api_.next(generator_, &token);
    if (status < 0)
      generatorFailed(after.c_str());
    if (status == 0)
      return false;
    take(0, token);
    return !rows_[0]->done;
  }
  std::vector<int64_t> tokens(rows_.size());
  std::vector<int32_t> produced(rows_.size());
  int status = api_.next_batch(generator_, tokens.data(), produced.data());
  if (status < 0)
    generatorFailed(after.c_str());
  bool open = false;
  for (size_t r = 0; r < rows_.size(); ++r) {
    // A row the generator has ended produces nothing from then on.
    if (!produced[r])
      rows_[r]->done = true;
    else if (!rows_[r]->done)
      take(r, tokens[r]);
    open = open || !rows_[r]->done;
  }
  return status != 0 && open;
}

void Loop::take(size_t r, int64_t token) {
  RowState &state = *rows_[r];
  if (token < 0 || token > int64_t(UINT32_MAX))
    fail("the generator produced id ", token, ", which no tokenizer has");
  ++generated_;
  state.row.ids.push_back(token);
  hand(r, state.stops.add(state.stream.push(uint32_t(token))));
  if (state.stops.stopIndex() >= 0)
    state.done = true;
}

std::vector<TextRow> Loop::run(const std::vector<std::string_view> &prompts) {
  for (size_t i = 0; i < request_.stops.size(); ++i)
    if (request_.stops[i].empty())
      fail("stop string ", i, " is empty");
  if (prompts.empty())
    fail("no prompt to generate from");
  for (size_t r = 0; r < prompts.size(); ++r) {
    rows_.push_back(std::make_unique<RowState>(tokenizer_, request_));
    rows_.back()->row.promptIds = encodePrompt(tokenizer_, prompts[r], request_);
    if (rows_.back()->row.promptIds.empty())
      fail(prompts.size() > 1 ? "prompt " + std::to_string(r) + " " : std::string("the prompt "),
           "encodes to no tokens; generation needs at least one");
  }
  prefill();
  while (!aborted_ && step()) {
  }
  std::vector<TextRow> out;
  for (size_t r = 0; r < rows_.size(); ++r) {
    RowState &state = *rows_[r];
    if (state.stops.stopIndex() < 0) {
      hand(r, state.stops.add(state.stream.finish()));
      hand(r, state.stops.finish());
    }
    state.row.text = state.stops.text();
    state.row.stopIndex = state.stops.stopIndex();
    out.push_back(std::move(state.row));
  }
  return out;
}

} // namespace

std::vector<int64_t> encodePrompt(const Tokenizer &tokenizer, std::string_view prompt,
                                  const TextRequest &request) {
  std::vector<uint32_t> encoded =
      tokenizer.encode(prompt, request.addSpecialTokens, request.applyLimits);
  std::vector<int64_t> ids(encoded.begin(), encoded.end());
  if (request.bosTokenId < 0 || !request.addSpecialTokens)
    return ids;
  bool startsWithBos = !ids.empty() && ids[0] == request.bosTokenId;
  if (request.addBos == 1 && !startsWithBos)
    ids.insert(ids.begin(), request.bosTokenId);
  if (request.addBos == 0 && startsWithBos) {
    // Only the bos the post-processor added: one the text spells stays.
    std::vector<uint32_t> plain = tokenizer.encode(prompt, false, request.applyLimits);
    if (plain.empty() || int64_t(plain[0]) != request.bosTokenId)
      ids.erase(ids.begin());
  }
  return ids;
}

std::vector<TextRow> generateText(const Tokenizer &tokenizer, onnxc_generator *generator,
                                  const onnxc_text_generation_api &api,
                                  const std::vector<std::string_view> &prompts,
                                  const TextRequest &request) {
  if (!generator)
    fail("text generation: the generator is NULL");
  if (!api.prefill || !api.next || !api.prefill_batch || !api.next_batch || !api.error)
    fail("text generation: the generation API is missing a function");
  return Loop(tokenizer, generator, api, request).run(prompts);
}

} // namespace onnxc::text
