//===- runtime/generate/GeneratorRows.cpp - The rows of a generation -===//
//
// The generator's batch: each row's prompt behind its left padding, the
// inputs of a run written from the rows (ids, a mask of 0 over the padding
// and 1 after it, position ids counted from the row's first real token, 1
// on the padding as HF fills them), the choice of each row's next id
// through the processors and the sampler, and the reordering of rows and of
// their cache rows that beam search needs.
//
//===----------------------------------------------------------------------===//
#include "Generator.h"

#include "GeneratorLength.h"

#include "DimExpr.h"
#include "DimExprQueries.h"
#include "Dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace onnxc::runtime {

namespace {

/// Writes `value` as element `index` of an integer, float or bool buffer.
void storeInteger(void *data, int32_t dtype, int64_t index, int64_t value) {
  switch (dtype) {
  case ONNXC_I64:
    static_cast<int64_t *>(data)[index] = value;
    break;
  case ONNXC_I32:
    static_cast<int32_t *>(data)[index] = int32_t(value);
    break;
  case ONNXC_F32:
    static_cast<float *>(data)[index] = float(value);
    break;
  case ONNXC_F64:
    static_cast<double *>(data)[index] = double(value);
    break;
  default: // bool, u8, i8: create refuses the other mask dtypes
    static_cast<uint8_t *>(data)[index] = uint8_t(value);
    break;
  }
}

std::string rowName(int64_t row, int64_t rows) {
  return rows > 1 ? " (row " + std::to_string(row) + ")" : "";
}

} // namespace

std::string Generator::checkRows(const int64_t *const *prompts, const int64_t *counts,
                                 int64_t rows) {
  if (rows < 1 || !prompts || !counts)
    return "the batch has no prompts; give at least one row";
  for (int64_t r = 0; r < rows; ++r) {
    if (counts[r] <= 0 || !prompts[r])
      return "the prompt" + rowName(r, rows) + " is empty; generation needs at least one token";
    for (int64_t i = 0; i < counts[r]; ++i)
      if (prompts[r][i] < 0)
        return "prompt" + rowName(r, rows) + " id " + std::to_string(prompts[r][i]) +
               " at position " + std::to_string(i) + " is negative; token ids are 0 or more";
  }
  if (encoder_ && !encoder_->encoded)
    return "no source is encoded: call encode with the source ids before prefill";
  if (rows == 1)
    return "";
  if (encoder_)
    return "an encoder-decoder generation takes one row; a batch of " + std::to_string(rows) +
           " prompts needs a decoder-only model";
  if (std::string problem = checkBatchLeadingCaches(); !problem.empty())
    return problem;
  if (std::all_of(counts, counts + rows, [&](int64_t count) { return count == counts[0]; }))
    return "";
  for (const CachePair &pair : roles_.cache)
    if (pair.isState())
      return "prompts of different lengths cannot share a batch of a model with a recurrent "
             "state ('" +
             std::string(model_.inputs[pair.input].name) +
             "'): the padding would enter it; give prompts of one length";
  // Left padding: the rows' real tokens must not see the padding (the mask)
  // and must keep their own positions (position ids from the mask).
  if (roles_.mask < 0 || roles_.positions < 0)
    return std::string("prompts of different lengths need a model with an attention mask and "
                       "position ids inputs; this one has no ") +
           (roles_.mask < 0 ? "mask" : "position ids") +
           " (its positions follow the padded sequence, so a shorter row would be shifted): give "
           "prompts of one length";
  return "";
}

std::string Generator::checkBatchLeadingCaches() const {
  for (size_t k = 0; k < roles_.cache.size(); ++k) {
    const onnxc_tensor_info &past = model_.inputs[roles_.cache[k].input];
    std::optional<int32_t> symbol = past.rank > 0 ? singleSymbolOf(past.dims[0]) : std::nullopt;
    if (!symbol || roles_.symbolKinds[size_t(*symbol)] != GeneratorRoles::SymbolKind::Batch ||
        pastAxis_[k] == 0)
      return "cache input '" + std::string(past.name) + "' " + past.shape_text +
             " does not lead with the batch; the generator runs one row with it";
  }
  return "";
}

void Generator::fillRunInputs(int64_t newTokens, int64_t past) {
  int64_t rows = int64_t(rows_.size()), total = past + newTokens;
  int64_t pad = padId();
  bool i32 = model_.inputs[roles_.ids].dtype == ONNXC_I32;
  ids_.resize(size_t(rows * newTokens));
  if (i32)
    ids32_.resize(ids_.size());
  for (int64_t r = 0; r < rows; ++r) {
    const Row &row = rows_[size_t(r)];
    for (int64_t t = 0; t < newTokens; ++t) {
      int64_t position = past + t;
      int64_t id = position < row.pad ? pad : row.tokens[size_t(position - row.pad)];
      ids_[size_t(r * newTokens + t)] = id;
      if (i32)
        ids32_[size_t(r * newTokens + t)] = int32_t(id);
    }
    if (roles_.mask >= 0) {
      int32_t dtype = model_.inputs[roles_.mask].dtype;
      int64_t width = maskWidth(total);
      for (int64_t j = 0; j < width; ++j)
        storeInteger(mask_.data(), dtype, r * width + j, j >= row.pad && j < total);
    }
    // A fixed-length cache: every row writes at the positions cached so far.
    if (roles_.writeIndices >= 0)
      storeInteger(writeIndices_.data(), model_.inputs[roles_.writeIndices].dtype, r, past);
    if (roles_.validLengths >= 0)
      storeInteger(validLengths_.data(), model_.inputs[roles_.validLengths].dtype, r, total);
    if (roles_.positions >= 0) {
      int32_t dtype = model_.inputs[roles_.positions].dtype;
      for (int64_t t = 0; t < newTokens; ++t) {
        int64_t position = past + t;
        storeInteger(positions_.data(), dtype, r * newTokens + t,
                     position < row.pad ? 1 : position - row.pad);
      }
    }
  }
}

int64_t Generator::maskWidth(int64_t total) const {
  if (!roles_.fixedCache())
    return total;
  // The mask's own length: a growing one (past + new), or the cache's.
  std::optional<int32_t> symbol = singleSymbolOf(model_.inputs[roles_.mask].dims[1]);
  bool grows = symbol && roles_.symbolKinds[size_t(*symbol)] == GeneratorRoles::SymbolKind::Total;
  return grows ? total : capacity_;
}

int64_t Generator::padId() const { return options_.pad_token_id >= 0 ? options_.pad_token_id : 0; }

const float *Generator::processedLogits(const Row &row, const float *logits, int64_t vocab) {
  // Without penalties or a minimum to hold stops back the logits are read
  // as they are, not copied first (200 KB a row and step for GPT-2's
  // vocabulary; by estimate, not measured, well under 1% of a step).
  if (!processors_.penalizes() && row.produced >= processors_.minNewTokens)
    return logits;
  scratch_.assign(logits, logits + vocab);
  const int64_t *generated = row.tokens.data() + row.promptLength;
  applyPenalties(scratch_.data(), vocab, processors_, row.tokens.data(), row.promptLength,
                 generated, row.produced, seen_);
  maskStopsBeforeMinimum(scratch_.data(), vocab, processors_, row.produced);
  return scratch_.data();
}

int64_t Generator::chooseToken(Row &row, const float *logits, int64_t vocab) {
  const float *scores = processedLogits(row, logits, vocab);
  int64_t token = row.sampler.choose(scores, vocab);
  if (!wantsLogprobs())
    return token;
  const SamplingParams &params = row.sampler.params();
  int32_t top = options_.top_logprobs;
  if (!params.sample || !(params.temperature > 0)) {
    // Greedy: the log-softmax of the processed logits.
    logSoftmaxAt(scores, vocab, &token, 1, &row.logprob);
    if (top > 0)
      onnxc::runtime::topLogprobs(scores, vocab, top, row.topIds, row.topLogprobs);
    return token;
  }
  // Sampling: the distribution the draw came from (the warpers' -inf ids
  // have probability 0).
  const std::vector<int64_t> &ids = row.sampler.lastIds();
  const std::vector<double> &probabilities = row.sampler.lastProbabilities();
  row.logprob = -INFINITY;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == token)
      row.logprob = float(std::log(probabilities[i]));
  topIds_.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    topIds_[i] = int64_t(i);
  size_t keep = std::min(ids.size(), size_t(top));
  std::partial_sort(topIds_.begin(), topIds_.begin() + std::ptrdiff_t(keep), topIds_.end(),
                    [&](int64_t a, int64_t b) {
                      return probabilities[size_t(a)] > probabilities[size_t(b)] ||
                             (probabilities[size_t(a)] == probabilities[size_t(b)] &&
                              ids[size_t(a)] < ids[size_t(b)]);
                    });
  row.topIds.resize(keep);
  row.topLogprobs.resize(keep);
  for (size_t i = 0; i < keep; ++i) {
    row.topIds[i] = ids[size_t(topIds_[i])];
    row.topLogprobs[i] = float(std::log(probabilities[size_t(topIds_[i])]));
  }
  return token;
}

bool Generator::logprob(int64_t row, float &value) {
  if (!wantsLogprobs())
    return fail("log-probabilities are off: set the logprobs option");
  if (row < 0 || row >= int64_t(rows_.size()) || rows_[size_t(row)].produced == 0)
    return fail("row " + std::to_string(row) +
                " has produced no token to give the "
                "log-probability of");
  value = rows_[size_t(row)].logprob;
  return true;
}

int32_t Generator::topLogprobs(int64_t row, int64_t *ids, float *logprobs, int32_t room) {
  float unused = 0;
  if (!logprob(row, unused))
    return -1;
  if (room < 0 || (room > 0 && (!ids || !logprobs)))
    return fail("top_logprobs: room is " + std::to_string(room) + " with a NULL array"), -1;
  const Row &r = rows_[size_t(row)];
  int32_t count = std::min(room, int32_t(r.topIds.size()));
  std::copy(r.topIds.begin(), r.topIds.begin() + count, ids);
  std::copy(r.topLogprobs.begin(), r.topLogprobs.begin() + count, logprobs);
  return count;
}

bool Generator::startRows(const int64_t *const *prompts, const int64_t *counts, int64_t rows) {
  error_.clear();
  started_ = false;
  sequences_.clear();
  if (std::string problem = checkRows(prompts, counts, rows); !problem.empty())
    return fail(problem);
  int64_t longest = *std::max_element(counts, counts + rows);
  int64_t wanted = options_.capacity > 0 ? options_.capacity
                                         : longest + std::max<int64_t>(options_.max_new_tokens, 1);
  if (roles_.fixedLength > 0 && wanted > roles_.fixedLength && options_.capacity <= 0)
    return fail("the prompt's " + std::to_string(longest) + " tokens and max_new_tokens " +
                std::to_string(options_.max_new_tokens) + " need " + std::to_string(wanted) +
                " positions, more than " + fixedCacheText() + "; at most " +
                std::to_string(std::max<int64_t>(roles_.fixedLength - longest, 0)) +
                " new tokens fit");
  if (std::string problem = checkSequenceLength(
          model_, roles_, longest, options_.capacity > 0 ? -1 : options_.max_new_tokens, wanted);
      !problem.empty())
    return fail(problem);
  if (!allocate(options_.capacity > 0 ? capacity_ : wanted, rows))
    return false;
  if (longest > capacity_)
    return fail("the prompt" + std::string(rows > 1 ? "s' longest row" : "") + " has " +
                std::to_string(longest) + " tokens but the capacity is " +
                std::to_string(capacity_) + " positions (the capacity option)");
  rows_.assign(size_t(rows), Row(sampler_));
  for (int64_t r = 0; r < rows; ++r) {
    Row &row = rows_[size_t(r)];
    row.tokens.reserve(size_t(capacity_));
    row.tokens.assign(prompts[r], prompts[r] + counts[r]);
    row.promptLength = counts[r];
    row.pad = longest - counts[r];
    row.maxNewTokens = options_.max_new_tokens;
    // Every row draws as it would alone: the same seed.
    row.sampler.reseed(options_.seed);
  }
  length_ = longest;
  cached_ = 0;
  current_ = 0;
  clearFedBackCaches();
  ended_ = false;
  logitsReady_ = false;
  if (!reserveSession(longest))
    return false;
  std::vector<std::vector<int64_t>> groups = prefillGroups(counts, rows);
  if (!(groups.empty() ? runModel(longest) : prefillApart(groups)))
    return false;
  started_ = logitsReady_ = true;
  return true;
}

int Generator::next(int64_t &token) {
  if (rows_.size() > 1) {
    started_ = false;
    return fail("a batch of " + std::to_string(rows_.size()) +
                " prompts is under way: call next_batch, not next"),
           -1;
  }
  int32_t produced = 0;
  return nextBatch(&token, &produced);
}

int Generator::nextBatch(int64_t *tokens, int32_t *produced) {
  error_.clear();
  if (!started_)
    return fail("no generation is under way: call prefill first (or again after an error)"), -1;
  bool running = false;
  for (Row &row : rows_) {
    row.finished = row.finished || row.produced >= row.maxNewTokens;
    running |= !row.finished;
  }
  if (ended_ || !running) {
    ended_ = true;
    return 0;
  }
  if (!logitsReady_) {
    if (length_ + 1 > capacity_)
      compactRows();
    if (length_ + 1 > capacity_) {
      started_ = false;
      return fail("the sequence would grow to " + std::to_string(length_ + 1) +
                  " positions, past the capacity of " + std::to_string(capacity_) +
                  " (the capacity option; by default prompt + max_new_tokens)"),
             -1;
    }
    ++length_;
    if (!runModel(1)) {
      started_ = false;
      return -1;
    }
  }
  logitsReady_ = false;
  for (size_t r = 0; r < rows_.size(); ++r) {
    Row &row = rows_[r];
    tokens[r] = -1;
    produced[r] = 0;
    if (row.finished) {
      // A finished row feeds the pad id; its output has ended.
      row.tokens.push_back(padId());
      continue;
    }
    int64_t vocab = 0;
    const float *logits = lastLogits(int64_t(r), vocab);
    if (!logits) {
      started_ = false;
      return fail("logits output '" + std::string(model_.outputs[roles_.logits].name) +
                  "' has no row for the last position of row " + std::to_string(r)),
             -1;
    }
    int64_t token = chooseToken(row, logits, vocab);
    row.tokens.push_back(token);
    ++row.produced;
    row.finished = processors_.isStop(token);
    tokens[r] = token;
    produced[r] = 1;
  }
  return 1;
}

} // namespace onnxc::runtime
