//===- runtime/generate/GeneratorJoin.cpp - Rows joining and leaving a running batch -===//
//
// Continuous batching, as a server needs it: between two steps a new prompt
// joins the rows under way and a finished (or abandoned) row leaves, each
// row keeping its own cache rows. The rows share one sequence axis, right
// aligned: a row shorter than the batch sits behind left padding (mask 0,
// position ids counted from its first real token), as prefill_batch lays
// out prompts of different lengths.
//
// Joining prompts run first as a generation of their own (several joining
// at once run together, left-padded among themselves, positions from each
// one's first token) into the join buffers; their keys and values do not
// depend on the padding in front of them, so they are copied into the
// batch's cache at each row's padded offset, and each first token is chosen
// from that run's logits. A
// prompt longer than the batch shifts the running rows right (more padding
// for them); a leaving row's index goes to the last row. When the shared
// sequence reaches the capacity, the padding all rows have is dropped (they
// shift left), so it never grows past the longest row and its next token.
//
//===----------------------------------------------------------------------===//
#include "Generator.h"

#include "GeneratorLength.h"

#include "DimExpr.h"
#include "Dtype.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace onnxc::runtime {

std::string Generator::joinProblem() const {
  if (encoder_)
    return "rows cannot join an encoder-decoder generation: it holds one row";
  if (!roles_.hasCache())
    return "rows join a running batch through its KV cache; this model has none (it re-runs "
           "the whole sequence at every step)";
  if (roles_.hasStates())
    return "rows cannot join a running batch of a model with a recurrent state (its padding "
           "would enter the state): run prompts of one length together with prefill_batch";
  if (roles_.mask < 0 || roles_.positions < 0)
    return std::string("rows join a running batch behind left padding, which needs an attention "
                       "mask and position ids inputs; this model has no ") +
           (roles_.mask < 0 ? "mask" : "position ids");
  if (options_.capacity <= 0)
    return "rows join a running batch in buffers allocated once: give the capacity option";
  if (roles_.fixedCache())
    return "rows cannot join a running batch over a fixed-length cache (opset 24's "
           "TensorScatter) yet: run the prompts together with prefill_batch";
  return checkBatchLeadingCaches();
}

int64_t Generator::maxPositions(int64_t upTo) const {
  if (roles_.fixedLength > 0) // a constant-length cache holds that many
    upTo = std::min(upTo, roles_.fixedLength);
  auto holds = [&](int64_t positions) {
    return checkSequenceLength(model_, roles_, 1, -1, positions).empty();
  };
  if (upTo < 1 || holds(upTo))
    return upTo;
  // The model's bounds are monotonic in the length: the largest that holds.
  int64_t low = 1, high = upTo;
  while (high - low > 1) {
    int64_t middle = low + (high - low) / 2;
    (holds(middle) ? low : high) = middle;
  }
  return low;
}

bool Generator::reserveRows(int64_t rows) {
  error_.clear();
  if (rows < 1)
    return fail("reserve_rows: " + std::to_string(rows) + " rows; give at least 1");
  if (started_ && !rows_.empty())
    return fail("reserve_rows: a generation is under way; reserve rows before the first prefill");
  if (std::string problem = joinProblem(); !problem.empty())
    return fail(problem);
  return allocate(capacity_, rows);
}

void Generator::cacheBlock(size_t pair, int64_t &outer, int64_t &inner) {
  const onnxc_tensor_info &past = model_.inputs[roles_.cache[pair].input];
  bindGeneratorSymbols(roles_, 1, cached_, symbols_.data(), 1);
  outer = 1;
  inner = dtypeSize(past.dtype);
  for (int32_t a = 1; a < past.rank; ++a) {
    if (a == pastAxis_[pair])
      continue;
    int64_t dim = evaluateDimExpr(past.dims[a], symbols_.data(), model_.num_symbols).value_or(0);
    (a < pastAxis_[pair] ? outer : inner) *= dim;
  }
}

void Generator::relayoutCache(const std::vector<int64_t> &sources,
                              const std::vector<int64_t> &shifts, int64_t newCached) {
  for (size_t k = 0; k < roles_.cache.size(); ++k) {
    if (roles_.cache[k].isState())
      continue; // no positions to move (a batch with states has no padding)
    // In place the layout keeps the capacity along the sequence; the
    // swapped halves are dense at the positions cached, so a new length
    // moves every row of them.
    bool restride = !laidOutAtCapacity(k) && newCached != cached_;
    std::vector<size_t> moved;
    for (size_t d = 0; d < sources.size(); ++d)
      if (restride || sources[d] != int64_t(d) || shifts[d] != 0)
        moved.push_back(d);
    if (moved.empty())
      continue;
    int64_t outer = 0, inner = 0;
    cacheBlock(k, outer, inner);
    size_t oldStride = size_t((laidOutAtCapacity(k) ? capacity_ : cached_) * inner);
    size_t newStride = size_t((laidOutAtCapacity(k) ? capacity_ : newCached) * inner);
    size_t used = size_t(cached_ * inner);
    auto *base = reinterpret_cast<uint8_t *>(cache_[k][inPlace_[k] ? 0 : size_t(current_)].data());
    // The rows read are saved first: a row written may be one of them.
    gathered_.resize(moved.size() * size_t(outer) * used);
    for (size_t i = 0; i < moved.size(); ++i)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(gathered_.data() + (i * size_t(outer) + size_t(o)) * used,
                    base + (size_t(sources[moved[i]]) * size_t(outer) + size_t(o)) * oldStride,
                    used);
    for (size_t i = 0; i < moved.size(); ++i) {
      size_t d = moved[i];
      int64_t shift = shifts[d];
      int64_t first = std::max<int64_t>(0, -shift);
      int64_t last = std::min<int64_t>(cached_, newCached - shift);
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t *row = base + (d * size_t(outer) + size_t(o)) * newStride;
        // The padding is masked out, but a NaN there would still poison the
        // attention's weighted sum (0 * NaN): it is zeroed.
        std::memset(row, 0, size_t(newCached * inner));
        if (last > first)
          std::memcpy(row + size_t((first + shift) * inner),
                      gathered_.data() + (i * size_t(outer) + size_t(o)) * used +
                          size_t(first * inner),
                      size_t((last - first) * inner));
      }
    }
  }
}

void Generator::compactRows() {
  if (rows_.empty() || !roles_.hasCache())
    return;
  int64_t shared = rows_[0].pad;
  for (const Row &r : rows_)
    shared = std::min(shared, r.pad);
  if (shared == 0)
    return;
  std::vector<int64_t> sources(rows_.size()), shifts(rows_.size(), -shared);
  for (size_t r = 0; r < rows_.size(); ++r) {
    sources[r] = int64_t(r);
    rows_[r].pad -= shared;
  }
  relayoutCache(sources, shifts, cached_ - shared);
  cached_ -= shared;
  length_ -= shared;
}

void Generator::placeJoinedRow(int64_t row, const JoinedRow &joined, int64_t offset, size_t half) {
  for (size_t k = 0; k < roles_.cache.size(); ++k) {
    int64_t outer = 0, inner = 0;
    cacheBlock(k, outer, inner);
    // The join run's present: the capacity's layout in place, else dense at its length.
    size_t fromStride = size_t((laidOutAtCapacity(k) ? capacity_ : joined.runLength) * inner);
    size_t toStride = size_t((laidOutAtCapacity(k) ? capacity_ : cached_) * inner);
    const auto *from =
        reinterpret_cast<const uint8_t *>(joinCache_[k][inPlace_[k] ? 0 : half].data());
    auto *base = reinterpret_cast<uint8_t *>(cache_[k][inPlace_[k] ? 0 : size_t(current_)].data());
    for (int64_t o = 0; o < outer; ++o) {
      uint8_t *to = base + (size_t(row) * size_t(outer) + size_t(o)) * toStride;
      std::memset(to, 0, size_t(offset * inner));
      std::memcpy(to + size_t(offset * inner),
                  from + (size_t(joined.index) * size_t(outer) + size_t(o)) * fromStride +
                      size_t(joined.runPad * inner),
                  size_t(joined.count * inner));
    }
  }
}

bool Generator::runApart(std::vector<Row> &apart, size_t &presentHalf, const ApartLogits &use) {
  // The batch's state is set aside and the prompts run as a generation of
  // their own (left-padded among themselves, as prefill_batch lays them out)
  // in the join buffers; everything is put back afterwards.
  std::vector<Row> running;
  running.swap(rows_);
  rows_.swap(apart);
  cache_.swap(joinCache_);
  std::swap(cacheBytes_, joinBytes_);
  int64_t savedCached = cached_, savedLength = length_;
  int savedCurrent = current_;
  int64_t longest = 0;
  for (const Row &row : rows_)
    longest = std::max(longest, row.pad + row.promptLength);
  cached_ = 0;
  current_ = 0;
  length_ = longest;
  bool ok = runModel(longest);
  for (size_t r = 0; ok && r < rows_.size(); ++r) {
    int64_t vocab = 0;
    const float *logits = lastLogits(int64_t(r), vocab);
    if (!logits) {
      ok = fail("logits output '" + std::string(model_.outputs[roles_.logits].name) +
                "' has no row for the last position of a prompt run apart");
      break;
    }
    use(rows_[r], r, logits, vocab);
  }
  presentHalf = size_t(current_);
  rows_.swap(apart);
  rows_.swap(running);
  cache_.swap(joinCache_);
  std::swap(cacheBytes_, joinBytes_);
  cached_ = savedCached;
  length_ = savedLength;
  current_ = savedCurrent;
  return ok;
}

bool Generator::runJoiningPrompts(std::vector<Row> &joining, size_t &presentHalf) {
  return runApart(joining, presentHalf,
                  [&](Row &joined, size_t, const float *logits, int64_t vocab) {
                    int64_t token = chooseToken(joined, logits, vocab);
                    joined.tokens.push_back(token);
                    joined.produced = 1;
                    joined.finished = processors_.isStop(token) || joined.maxNewTokens <= 1;
                  });
}

bool Generator::makeJoiningRow(const int64_t *prompt, int64_t count,
                               const onnxc_generate_options *rowOptions, Row &row) {
  row.maxNewTokens = options_.max_new_tokens;
  if (rowOptions) {
    SamplingParams params;
    params.sample = rowOptions->do_sample != 0;
    params.temperature = rowOptions->temperature;
    params.topK = rowOptions->top_k;
    params.topP = rowOptions->top_p;
    params.minP = rowOptions->min_p;
    row.sampler = Sampler(params, rowOptions->seed);
    row.maxNewTokens = rowOptions->max_new_tokens;
  } else {
    row.sampler.reseed(options_.seed);
  }
  if (row.maxNewTokens < 1)
    return fail("a joining row's max_new_tokens is " + std::to_string(row.maxNewTokens) +
                "; it must be 1 or more");
  row.tokens.reserve(size_t(capacity_ > 0 ? capacity_ : count + row.maxNewTokens));
  row.tokens.assign(prompt, prompt + count);
  row.promptLength = count;
  return true;
}

bool Generator::joinGroup(std::vector<Row> &joining, int64_t *firsts) {
  int64_t longest = 0;
  for (const Row &row : joining)
    longest = std::max(longest, row.promptLength);
  int64_t newCached = std::max(cached_, longest);
  if (newCached + 1 > capacity_) {
    // The padding every row has is dropped (the rows shift left) only when it is in the way.
    compactRows();
    newCached = std::max(cached_, longest);
  }
  if (newCached + 1 > capacity_)
    return fail("a joining prompt of " + std::to_string(longest) + " tokens in a batch at " +
                std::to_string(cached_) + " positions needs " + std::to_string(newCached + 1) +
                " positions; the capacity is " + std::to_string(capacity_));
  std::vector<JoinedRow> placed;
  for (size_t j = 0; j < joining.size(); ++j) {
    joining[j].pad = longest - joining[j].promptLength;
    placed.push_back({int64_t(j), joining[j].promptLength, joining[j].pad, longest});
  }
  size_t half = 0;
  if (!runJoiningPrompts(joining, half))
    return false;
  // A longer prompt pushes the running rows right, behind more padding.
  int64_t shift = newCached - cached_;
  std::vector<int64_t> sources(rows_.size()), shifts(rows_.size(), shift);
  for (size_t r = 0; r < rows_.size(); ++r) {
    sources[r] = int64_t(r);
    rows_[r].pad += shift;
  }
  relayoutCache(sources, shifts, newCached);
  cached_ = length_ = newCached;
  for (size_t j = 0; j < joining.size(); ++j) {
    Row &row = joining[j];
    row.pad = newCached - row.promptLength;
    placeJoinedRow(int64_t(rows_.size()), placed[j], row.pad, half);
    firsts[j] = row.tokens.back();
    rows_.push_back(std::move(row));
  }
  ended_ = false;
  return true;
}

bool Generator::addRows(const int64_t *const *prompts, const int64_t *counts, int64_t count,
                        const onnxc_generate_options *const *rowOptions, int64_t *firsts) {
  error_.clear();
  if (count < 1 || !firsts)
    return fail("add_rows: no prompts (count " + std::to_string(count) +
                ") or no first-token array");
  std::fill(firsts, firsts + count, -1);
  if (std::string problem = checkRows(prompts, counts, count); !problem.empty())
    return fail(problem);
  std::vector<Row> joining(static_cast<size_t>(count), Row(sampler_));
  for (int64_t j = 0; j < count; ++j)
    if (!makeJoiningRow(prompts[j], counts[j], rowOptions ? rowOptions[j] : nullptr,
                        joining[size_t(j)]))
      return false;
  if (!started_ || rows_.empty()) {
    // The first rows start the generation, as prefill_batch does.
    if (!startRows(prompts, counts, count))
      return false;
    for (size_t j = 0; j < joining.size(); ++j) {
      rows_[j].sampler = joining[j].sampler;
      rows_[j].maxNewTokens = joining[j].maxNewTokens;
    }
    std::vector<int32_t> produced(static_cast<size_t>(count));
    return nextBatch(firsts, produced.data()) == 1 || fail(error_.empty() ? "no token" : error_);
  }
  if (logitsReady_)
    return fail("add_row: the batch's last logits are unread; call next_batch first");
  if (std::string problem = joinProblem(); !problem.empty())
    return fail(problem);
  if (int64_t(rows_.size()) + count > batchCapacity_)
    return fail("the batch holds " + std::to_string(rows_.size()) + " rows; " +
                std::to_string(count) + " more pass its reserved maximum of " +
                std::to_string(batchCapacity_) + " (reserve_rows)");
  // The prompts run together, a group of kJoinRows at a time (the join buffers' rows).
  for (int64_t start = 0; start < count; start += kJoinRows) {
    int64_t end = std::min(count, start + kJoinRows);
    std::vector<Row> group(std::make_move_iterator(joining.begin() + start),
                           std::make_move_iterator(joining.begin() + end));
    if (!joinGroup(group, firsts + start))
      return false;
  }
  return true;
}

bool Generator::addRow(const int64_t *prompt, int64_t count,
                       const onnxc_generate_options *rowOptions, int64_t &first) {
  return addRows(&prompt, &count, 1, &rowOptions, &first);
}

bool Generator::removeRow(int64_t row) {
  error_.clear();
  if (!started_ || row < 0 || row >= int64_t(rows_.size()))
    return fail("remove_row: row " + std::to_string(row) + " is not in the batch of " +
                std::to_string(started_ ? rows_.size() : 0) + " rows");
  if (logitsReady_)
    return fail("remove_row: the batch's last logits are unread; call next_batch first");
  // The last row takes the freed index: one row's cache moves, not all after it.
  size_t last = rows_.size() - 1;
  if (size_t(row) != last) {
    std::vector<int64_t> sources(last), shifts(last, 0);
    for (size_t r = 0; r < last; ++r)
      sources[r] = int64_t(r);
    sources[size_t(row)] = int64_t(last);
    relayoutCache(sources, shifts, cached_);
    rows_[size_t(row)] = std::move(rows_[last]);
  }
  rows_.pop_back();
  if (rows_.empty()) {
    started_ = false;
    cached_ = length_ = 0;
    return true;
  }
  bool running = false;
  for (const Row &r : rows_)
    running |= !r.finished;
  ended_ = !running;
  return true;
}

} // namespace onnxc::runtime
