//===- runtime/generate/BeamSearch.cpp - The beam search scorer of HF transformers -===//
#include "BeamSearch.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace onnxc::runtime {

std::string checkBeamOptions(const BeamOptions &options) {
  if (options.numBeams < 1)
    return "num_beams is " + std::to_string(options.numBeams) + "; it must be 1 or more";
  if (options.numReturnSequences < 1 || options.numReturnSequences > options.numBeams)
    return "num_return_sequences is " + std::to_string(options.numReturnSequences) +
           "; it must be between 1 and num_beams (" + std::to_string(options.numBeams) + ")";
  if (options.earlyStopping < -1 || options.earlyStopping > 1)
    return "early_stopping is " + std::to_string(options.earlyStopping) +
           "; use 1 (True), 0 (False) or -1 (\"never\")";
  if (!std::isfinite(options.lengthPenalty))
    return "length_penalty is not a finite number";
  return "";
}

BeamScorer::BeamScorer(const BeamOptions &options, int64_t promptLength, int64_t maxLength)
    : options_(options), promptLength_(promptLength), maxLength_(maxLength) {}

void BeamScorer::add(std::vector<int64_t> tokens, double sumLogprobs, int64_t generatedLength) {
  double score = sumLogprobs / std::pow(double(generatedLength), double(options_.lengthPenalty));
  size_t beams = size_t(options_.numBeams);
  if (finished_.size() >= beams && !(score > worstScore_))
    return;
  finished_.push_back({score, std::move(tokens)});
  if (finished_.size() <= beams) {
    worstScore_ = std::min(score, worstScore_);
    return;
  }
  // HF sorts (score, index) pairs, drops the first and takes the next's score.
  std::vector<size_t> order(finished_.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    return finished_[a].score < finished_[b].score ||
           (finished_[a].score == finished_[b].score && a < b);
  });
  worstScore_ = finished_[order[1]].score;
  finished_.erase(finished_.begin() + std::ptrdiff_t(order[0]));
}

bool BeamScorer::isDone(double bestSumLogprobs, int64_t currentLength) const {
  if (finished_.size() < size_t(options_.numBeams))
    return false;
  if (options_.earlyStopping == 1)
    return true;
  int64_t length = currentLength - promptLength_;
  if (options_.earlyStopping == -1 && options_.lengthPenalty > 0.0f)
    length = maxLength_ - promptLength_;
  double best = bestSumLogprobs / std::pow(double(length), double(options_.lengthPenalty));
  return worstScore_ >= best;
}

std::string BeamScorer::processOne(const std::vector<BeamCandidate> &ranked,
                                   const std::vector<std::vector<int64_t>> &generated,
                                   const std::vector<bool> &stops,
                                   std::vector<BeamCandidate> &next) {
  next.clear();
  if (done_)
    return "the beam search is already done";
  size_t beams = size_t(options_.numBeams);
  // The length the candidates' scores were computed on: the prompt, the
  // ids generated so far and the candidate.
  int64_t currentLength = promptLength_ + int64_t(generated.empty() ? 0 : generated[0].size()) + 1;
  for (size_t rank = 0; rank < ranked.size() && next.size() < beams; ++rank) {
    const BeamCandidate &candidate = ranked[rank];
    if (!stops[rank]) {
      next.push_back(candidate);
      continue;
    }
    if (rank >= beams)
      continue; // a stop ranked below the beams ends nothing
    std::vector<int64_t> tokens = generated[size_t(candidate.beam)];
    tokens.push_back(candidate.token);
    add(std::move(tokens), double(candidate.score), currentLength - promptLength_);
  }
  if (next.size() < beams)
    return "beam search: fewer than num_beams candidates are not stop ids";
  double best = ranked.empty() ? -INFINITY : double(ranked[0].score);
  done_ = done_ || isDone(best, currentLength);
  return "";
}

std::vector<BeamHypothesis> BeamScorer::finalize(const std::vector<std::vector<int64_t>> &generated,
                                                 const std::vector<float> &beamScores) {
  if (!done_)
    for (size_t b = 0; b < generated.size(); ++b)
      add(generated[b], double(beamScores[b]), int64_t(generated[b].size()));
  // HF sorts by score (a stable sort) and pops from the end.
  std::vector<BeamHypothesis> sorted = finished_;
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const BeamHypothesis &a, const BeamHypothesis &b) { return a.score < b.score; });
  std::vector<BeamHypothesis> best;
  for (int32_t i = 0; i < options_.numReturnSequences && !sorted.empty(); ++i) {
    best.push_back(std::move(sorted.back()));
    sorted.pop_back();
  }
  return best;
}

} // namespace onnxc::runtime
