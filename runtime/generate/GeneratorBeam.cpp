//===- runtime/generate/GeneratorBeam.cpp - Beam search over the generator's rows -===//
//
// The beams are the rows of the batch, the prompt repeated in each (HF
// expands input_ids the same way). A step scores every beam's log-softmax
// (processed as HF processes it: penalties on the log-probabilities) plus
// the beam's score, BeamScorer picks the beams that continue, and the rows
// are reordered in place: the ids, and every cache buffer's rows gathered
// so row b holds the cache of the beam it extends (HF's _reorder_cache).
// Only the positions filled so far are copied, and only the rows that move.
//
//===----------------------------------------------------------------------===//
#include "Generator.h"

#include "DimExpr.h"
#include "Dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace onnxc::runtime {

namespace {

/// Rewrites `row` as its log-softmax, in float as torch's log_softmax.
void logSoftmaxInPlace(float *row, int64_t vocab) {
  float normalizer = float(logSumExp(row, vocab));
  for (int64_t v = 0; v < vocab; ++v)
    row[v] = row[v] - normalizer;
}

/// Appends the `keep` best (score, then lower id) of `scores` as candidates of `beam`.
void bestOfRow(const float *scores, int64_t vocab, int32_t beam, size_t keep,
               std::vector<int64_t> &order, std::vector<BeamCandidate> &out) {
  order.resize(size_t(vocab));
  for (int64_t v = 0; v < vocab; ++v)
    order[size_t(v)] = v;
  auto better = [scores](int64_t a, int64_t b) {
    float x = std::isnan(scores[a]) ? -INFINITY : scores[a];
    float y = std::isnan(scores[b]) ? -INFINITY : scores[b];
    return x > y || (x == y && a < b);
  };
  keep = std::min(keep, order.size());
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(keep), order.end(), better);
  for (size_t i = 0; i < keep; ++i)
    out.push_back({scores[order[i]], order[i], beam});
}

} // namespace

void Generator::reorderRows(const std::vector<int32_t> &sources) {
  std::vector<std::vector<int64_t>> tokens(rows_.size());
  for (size_t b = 0; b < rows_.size(); ++b)
    tokens[b] = rows_[size_t(sources[b])].tokens;
  for (size_t b = 0; b < rows_.size(); ++b)
    rows_[b].tokens.swap(tokens[b]);
  gatherCacheRows(sources);
}

void Generator::gatherCacheRows(const std::vector<int32_t> &sources) {
  size_t rows = rows_.size();
  // A row that another copies from and that is itself overwritten is saved first.
  std::vector<int32_t> slot(rows, -1);
  int32_t slots = 0;
  for (size_t b = 0; b < rows; ++b) {
    size_t from = size_t(sources[b]);
    if (from != b && size_t(sources[from]) != from && slot[from] < 0)
      slot[from] = slots++;
  }
  bindGeneratorSymbols(roles_, 1, cached_, symbols_.data(), 1);
  for (size_t k = 0; k < roles_.cache.size(); ++k) {
    const onnxc_tensor_info &past = model_.inputs[roles_.cache[k].input];
    int32_t axis = pastAxis_[k];
    // The layout's rows along the sequence axis: the capacity in place or
    // for a fixed-length cache, else the dense present of the last run.
    // A state has no sequence axis: its row is one block.
    bool state = roles_.cache[k].isState();
    int64_t stride = state ? 1 : laidOutAtCapacity(k) ? capacity_ : cached_;
    int64_t outer = 1, inner = dtypeSize(past.dtype);
    for (int32_t a = 1; a < past.rank; ++a) {
      if (a == axis)
        continue;
      int64_t dim = evaluateDimExpr(past.dims[a], symbols_.data(), model_.num_symbols).value_or(0);
      (a < axis ? outer : inner) *= dim;
    }
    size_t chunk = size_t((state ? 1 : cached_) * inner), chunkStride = size_t(stride * inner);
    size_t rowBytes = size_t(outer) * chunkStride, savedRow = size_t(outer) * chunk;
    uint8_t *base =
        reinterpret_cast<uint8_t *>(cache_[k][inPlace_[k] ? 0 : size_t(current_)].data());
    gathered_.resize(std::max(gathered_.size(), size_t(slots) * savedRow));
    for (size_t r = 0; r < rows; ++r)
      for (int64_t o = 0; slot[r] >= 0 && o < outer; ++o)
        std::memcpy(gathered_.data() + size_t(slot[r]) * savedRow + size_t(o) * chunk,
                    base + r * rowBytes + size_t(o) * chunkStride, chunk);
    for (size_t b = 0; b < rows; ++b) {
      size_t from = size_t(sources[b]);
      if (from == b)
        continue;
      for (int64_t o = 0; o < outer; ++o) {
        const uint8_t *source =
            slot[from] >= 0 ? gathered_.data() + size_t(slot[from]) * savedRow + size_t(o) * chunk
                            : base + from * rowBytes + size_t(o) * chunkStride;
        std::memcpy(base + b * rowBytes + size_t(o) * chunkStride, source, chunk);
      }
    }
  }
}

bool Generator::beamSearch(const int64_t *promptIds, int64_t count) {
  int32_t beams = beam_.numBeams;
  if (beams < 2)
    return fail("beam search needs num_beams >= 2; with 1 beam it is greedy decoding (prefill "
                "and next)");
  std::vector<const int64_t *> prompts(size_t(beams), promptIds);
  std::vector<int64_t> counts(size_t(beams), count);
  if (!startRows(prompts.data(), counts.data(), beams))
    return false;
  started_ = false; // next() does not continue a beam search
  int64_t maxLength = count + options_.max_new_tokens;
  BeamScorer scorer(beam_, count, maxLength);
  // Only the first beam's candidates count at the first step (HF: -1e9).
  std::vector<float> beamScores(size_t(beams), -1e9f);
  beamScores[0] = 0;
  std::vector<std::vector<int64_t>> generated(static_cast<size_t>(beams));
  if (options_.max_new_tokens == 0) {
    sequences_ = scorer.finalize(generated, beamScores);
    return true;
  }
  size_t keep = size_t(std::max<size_t>(2, 1 + processors_.stopIds.size()) * size_t(beams));
  std::vector<BeamCandidate> ranked, next;
  std::vector<int64_t> order;
  std::vector<int32_t> sources(static_cast<size_t>(beams));
  for (int64_t length = count;;) {
    ranked.clear();
    for (int32_t b = 0; b < beams; ++b) {
      int64_t vocab = 0;
      const float *logits = lastLogits(b, vocab);
      if (!logits)
        return fail("logits output '" + std::string(model_.outputs[roles_.logits].name) +
                    "' has no row for beam " + std::to_string(b));
      Row &row = rows_[size_t(b)];
      scratch_.assign(logits, logits + vocab);
      logSoftmaxInPlace(scratch_.data(), vocab);
      applyPenalties(scratch_.data(), vocab, processors_, row.tokens.data(), row.promptLength,
                     row.tokens.data() + row.promptLength, row.produced, seen_);
      maskStopsBeforeMinimum(scratch_.data(), vocab, processors_, row.produced);
      for (float &score : scratch_)
        score += beamScores[size_t(b)];
      bestOfRow(scratch_.data(), vocab, b, keep, order, ranked);
    }
    std::stable_sort(
        ranked.begin(), ranked.end(),
        [](const BeamCandidate &x, const BeamCandidate &y) { return x.score > y.score; });
    ranked.resize(std::min(ranked.size(), keep));
    std::string problem = scorer.process(
        ranked, generated, [this](int64_t token) { return processors_.isStop(token); }, next);
    if (!problem.empty())
      return fail(problem);
    for (int32_t b = 0; b < beams; ++b)
      sources[size_t(b)] = next[size_t(b)].beam;
    std::vector<std::vector<int64_t>> extended(static_cast<size_t>(beams));
    for (int32_t b = 0; b < beams; ++b) {
      extended[size_t(b)] = generated[size_t(sources[size_t(b)])];
      extended[size_t(b)].push_back(next[size_t(b)].token);
      beamScores[size_t(b)] = next[size_t(b)].score;
    }
    generated.swap(extended);
    reorderRows(sources);
    for (int32_t b = 0; b < beams; ++b) {
      rows_[size_t(b)].tokens.push_back(next[size_t(b)].token);
      rows_[size_t(b)].produced = int64_t(generated[size_t(b)].size());
    }
    if (scorer.done() || ++length >= maxLength)
      break;
    if (length_ + 1 > capacity_)
      return fail("the beams would grow to " + std::to_string(length_ + 1) +
                  " positions, past the capacity of " + std::to_string(capacity_));
    ++length_;
    if (!runModel(1))
      return false;
  }
  sequences_ = scorer.finalize(generated, beamScores);
  return true;
}

} // namespace onnxc::runtime
