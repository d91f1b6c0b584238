//===- runtime/generate/BeamSearch.h - The beam search scorer of HF transformers -===//
//
// Beam search as transformers 4.40's BeamSearchScorer and BeamHypotheses do
// it, for one prompt, so that the same model gives the same sequences:
//
//   each step ranks (beam score + log-probability) over every beam and id,
//   keeps the best max(2, 1 + stop ids) * beams, and walks them best first:
//   a stop id among the first `beams` ranks ends a hypothesis (scored
//   sum / generated_length ^ length_penalty, the stop counted); any other
//   candidate continues as the next beam, until `beams` continue.
//
// The finished list keeps the best `beams` hypotheses. The search is done
// when it is full and, by early_stopping: True, at once; False, when the
// best running beam divided by the current length cannot beat the worst
// kept; "never", the same with the longest length when length_penalty > 0.
// Finalize adds the running beams and returns the best
// num_return_sequences. The Generator runs the model; this file only scores.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::runtime {

struct BeamOptions {
  int32_t numBeams = 1;
  float lengthPenalty = 1.0f;
  /// HF's early_stopping: 1 True, 0 False, -1 "never".
  int32_t earlyStopping = 0;
  int32_t numReturnSequences = 1;
};

/// Why the options cannot run (num_beams < 1, num_return_sequences outside
/// [1, num_beams], early_stopping not 1, 0 or -1, a NaN length_penalty), or empty.
std::string checkBeamOptions(const BeamOptions &options);

/// One candidate of a step: the beam it extends, the id and the score the
/// sequence would have (the beam's score plus the id's log-probability).
struct BeamCandidate {
  float score = 0;
  int64_t token = 0;
  int32_t beam = 0;
};

/// A finished sequence: its generated ids (a stop id that ended it
/// included) and its score, sum of log-probabilities / length ^ penalty.
struct BeamHypothesis {
  double score = 0;
  std::vector<int64_t> tokens;
};

class BeamScorer {
public:
  /// `maxLength` is the prompt plus max_new_tokens.
  BeamScorer(const BeamOptions &options, int64_t promptLength, int64_t maxLength);

  /// One step. `ranked` holds the candidates best first; `generated[b]` the
  /// ids beam b has generated so far; `isStop` says which ids end a
  /// sequence. Fills `next` with the numBeams candidates that continue, or
  /// returns an error line when too few do.
  template <typename IsStop>
  std::string process(const std::vector<BeamCandidate> &ranked,
                      const std::vector<std::vector<int64_t>> &generated, IsStop isStop,
                      std::vector<BeamCandidate> &next);

  bool done() const { return done_; }

  /// Adds the running beams (unless done) and returns the best
  /// num_return_sequences, best first.
  std::vector<BeamHypothesis> finalize(const std::vector<std::vector<int64_t>> &generated,
                                       const std::vector<float> &beamScores);

private:
  void add(std::vector<int64_t> tokens, double sumLogprobs, int64_t generatedLength);
  bool isDone(double bestSumLogprobs, int64_t currentLength) const;
  std::string processOne(const std::vector<BeamCandidate> &ranked,
                         const std::vector<std::vector<int64_t>> &generated,
                         const std::vector<bool> &stops, std::vector<BeamCandidate> &next);

  BeamOptions options_;
  int64_t promptLength_, maxLength_;
  std::vector<BeamHypothesis> finished_; ///< In the order added, as HF's list.
  double worstScore_ = 1e9;
  bool done_ = false;
};

template <typename IsStop>
std::string BeamScorer::process(const std::vector<BeamCandidate> &ranked,
                                const std::vector<std::vector<int64_t>> &generated, IsStop isStop,
                                std::vector<BeamCandidate> &next) {
  std::vector<bool> stops(ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i)
    stops[i] = isStop(ranked[i].token);
  return processOne(ranked, generated, stops, next);
}

} // namespace onnxc::runtime
