//===- tests/unit/runtime/GenerateBeamScorerTest.cpp - HF's BeamSearchScorer rules --===//
//
// The beam scorer on candidates written by hand: which beams continue, when
// a stop id ends a hypothesis, the length penalty, the three early-stopping
// rules and the ranking of the returned sequences.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/BeamSearch.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace onnxc::runtime;

namespace {

constexpr int64_t kStop = 9;

bool isStop(int64_t token) { return token == kStop; }

BeamOptions beams(int32_t count, float lengthPenalty = 1.0f, int32_t early = 0,
                  int32_t returned = 1) {
  BeamOptions options;
  options.numBeams = count;
  options.lengthPenalty = lengthPenalty;
  options.earlyStopping = early;
  options.numReturnSequences = returned;
  return options;
}

} // namespace

TEST(GenerateBeamScorer, StopsInTheTopRanksEndHypothesesOthersContinue) {
  BeamScorer scorer(beams(2), 3, 13);
  std::vector<std::vector<int64_t>> generated = {{4}, {5}};
  // Ranked: a stop at rank 0 (ends beam 1's hypothesis), two continuations,
  // a stop at rank 3 (below the beams: ignored).
  std::vector<BeamCandidate> ranked = {
      {-1.0f, kStop, 1}, {-1.5f, 7, 0}, {-2.0f, 8, 1}, {-2.5f, kStop, 0}};
  std::vector<BeamCandidate> next;
  ASSERT_EQ(scorer.process(ranked, generated, isStop, next), "");
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].token, 7);
  EXPECT_EQ(next[1].beam, 1);
  EXPECT_FALSE(scorer.done()); // one finished of two
  std::vector<BeamHypothesis> best = scorer.finalize({{4, 7}, {5, 8}}, {-1.5f, -2.0f});
  ASSERT_EQ(best.size(), 1u);
  // The stop hypothesis: -1 / 2 tokens = -0.5 beats -1.5 / 2 = -0.75.
  EXPECT_EQ(best[0].tokens, (std::vector<int64_t>{5, kStop}));
  EXPECT_DOUBLE_EQ(best[0].score, -0.5);
}

TEST(GenerateBeamScorer, LengthPenaltyDividesByLengthToThePower) {
  BeamScorer scorer(beams(1, 2.0f), 1, 10);
  std::vector<BeamHypothesis> best = scorer.finalize({{1, 2, 3}}, {-9.0f});
  EXPECT_DOUBLE_EQ(best[0].score, -9.0 / 9.0);
}

TEST(GenerateBeamScorer, EarlyStoppingRules) {
  // Two beams, both finish at the first step with -1 (length 1).
  std::vector<BeamCandidate> ranked = {
      {-1.0f, kStop, 0}, {-1.0f, kStop, 1}, {-3.0f, 5, 0}, {-4.0f, 6, 1}};
  std::vector<std::vector<int64_t>> generated = {{}, {}};
  std::vector<BeamCandidate> next;
  // True: done as soon as num_beams hypotheses exist.
  BeamScorer eager(beams(2, 1.0f, 1), 4, 20);
  ASSERT_EQ(eager.process(ranked, generated, isStop, next), "");
  EXPECT_TRUE(eager.done());
  // False: the best running score -1 / 1 cannot beat the worst kept -1: done.
  BeamScorer heuristic(beams(2, 1.0f, 0), 4, 20);
  ASSERT_EQ(heuristic.process(ranked, generated, isStop, next), "");
  EXPECT_TRUE(heuristic.done());
  // "never" with length_penalty > 0: the best could reach -1 / 16 at the
  // longest length, better than -1: not done.
  BeamScorer never(beams(2, 1.0f, -1), 4, 20);
  ASSERT_EQ(never.process(ranked, generated, isStop, next), "");
  EXPECT_FALSE(never.done());
}

TEST(GenerateBeamScorer, ReturnsTheBestSequencesBestFirst) {
  BeamScorer scorer(beams(3, 1.0f, 0, 2), 2, 6);
  std::vector<BeamHypothesis> best = scorer.finalize({{1}, {2}, {3}}, {-3.0f, -1.0f, -2.0f});
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].tokens, (std::vector<int64_t>{2}));
  EXPECT_EQ(best[1].tokens, (std::vector<int64_t>{3}));
}

TEST(GenerateBeamScorer, TooManyStopsIsAnError) {
  BeamScorer scorer(beams(2), 1, 5);
  std::vector<BeamCandidate> ranked = {{-1.0f, kStop, 0}, {-2.0f, kStop, 1}, {-3.0f, 4, 0}};
  std::vector<BeamCandidate> next;
  EXPECT_NE(scorer.process(ranked, {{}, {}}, isStop, next), "");
}

TEST(GenerateBeamScorer, BadOptionsAreOneLine) {
  EXPECT_EQ(checkBeamOptions(beams(4, 1.0f, 0, 4)), "");
  EXPECT_NE(checkBeamOptions(beams(0)).find("num_beams is 0"), std::string::npos);
  EXPECT_NE(checkBeamOptions(beams(2, 1.0f, 0, 3)).find("num_return_sequences is 3"),
            std::string::npos);
  EXPECT_NE(checkBeamOptions(beams(2, 1.0f, 2)).find("early_stopping"), std::string::npos);
}
