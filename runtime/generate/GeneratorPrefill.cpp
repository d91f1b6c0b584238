//===- runtime/generate/GeneratorPrefill.cpp - A batch's prompts prefilled apart -===//
//
// prefill_batch on prompts of different lengths. One run of them all
// left-padded to the longest feeds the padding through every layer (8
// prompts of 16 to 64 ids: 512 positions for 317 ids). Instead the prompts
// run in groups of similar lengths, each group as a generation of its own in
// the join buffers, as rows joining a running batch do (GeneratorJoin.cpp):
// each row's keys and values are then copied into its row of the batch's
// cache behind its left padding. They do not depend on what is in front of
// the row (mask 0, positions counted from its first id), so the batch's
// cache is the one a padded run writes, and each row still gets the tokens
// it gets alone. Each row's last logits are kept, and the first next_batch
// chooses from them as it does after one run.
//
// How to group: a run costs its positions plus the weights streamed once,
// which at a few rows of a short prompt is memory-bound and costs about
// what kRunPositions positions more of the matrix products cost. A row
// joins the group before it (longest first) when the padding it needs there
// is at most that; the grouping is used when it is cheaper than one padded
// run by the same count.
//
//===----------------------------------------------------------------------===//
#include "Generator.h"

#include <algorithm>
#include <numeric>

namespace onnxc::runtime {

namespace {

/// A run's fixed cost in positions: streaming the weights once (memory-bound
/// at a few rows) against one more position's matrix products. On GPT-2
/// small, 2 Zen 3 cores, a prompt of 16 ids ran at 1.4 ms an id, of 64 at
/// 1.16, 8 rows of 64 at 0.95: about 12 positions a run. The 8 prompts of 16
/// to 64 ids of benchmarks/generate/batch.py (317 ids) took 0.51 s padded
/// to 64, 0.39 s one by one, 0.37 s in pairs (this count's grouping), 0.41
/// s in fours (24 positions a run).
constexpr int64_t kRunPositions = 12;

} // namespace

std::vector<std::vector<int64_t>> Generator::prefillGroups(const int64_t *counts,
                                                           int64_t rows) const {
  std::vector<std::vector<int64_t>> groups;
  if (rows < 2 || !roles_.hasCache() || roles_.fixedCache() || encoder_ || roles_.mask < 0 ||
      roles_.positions < 0 || joinCache_.empty() ||
      std::all_of(counts, counts + rows, [&](int64_t count) { return count == counts[0]; }))
    return groups;
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), int64_t(0));
  // Longest first, so that a group's first row is its longest; ties keep
  // the batch's order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return counts[a] > counts[b]; });
  int64_t groupedCost = 0;
  for (int64_t r : order) {
    if (!groups.empty() && int64_t(groups.back().size()) < kJoinRows &&
        counts[groups.back()[0]] - counts[r] <= kRunPositions) {
      groups.back().push_back(r);
      groupedCost += counts[groups.back()[0]];
      continue;
    }
    groups.push_back({r});
    groupedCost += kRunPositions + counts[r];
  }
  int64_t paddedCost = kRunPositions + rows * counts[order[0]];
  if (paddedCost <= groupedCost)
    groups.clear();
  return groups;
}

bool Generator::prefillApart(const std::vector<std::vector<int64_t>> &groups) {
  int64_t rows = int64_t(rows_.size());
  // The batch's cache as a padded run leaves it: every row `length_` long.
  cached_ = length_;
  current_ = 0;
  promptVocab_ = 0;
  for (const std::vector<int64_t> &group : groups) {
    int64_t groupLongest = rows_[size_t(group[0])].promptLength;
    std::vector<Row> apart;
    apart.reserve(group.size());
    for (int64_t r : group) {
      apart.push_back(rows_[size_t(r)]);
      apart.back().pad = groupLongest - apart.back().promptLength;
    }
    size_t half = 0;
    bool vocabChanged = false;
    bool ok = runApart(apart, half, [&](Row &, size_t j, const float *logits, int64_t vocab) {
      if (promptVocab_ == 0) {
        promptVocab_ = vocab;
        promptLogits_.resize(size_t(rows * vocab));
      }
      vocabChanged |= vocab != promptVocab_;
      if (!vocabChanged)
        std::copy(logits, logits + vocab, promptLogits_.data() + group[j] * vocab);
    });
    if (!ok)
      return false;
    if (vocabChanged)
      return fail("logits output '" + std::string(model_.outputs[roles_.logits].name) +
                  "' changed its vocabulary size between two runs of one batch's prompts");
    for (size_t j = 0; j < group.size(); ++j) {
      const Row &placed = rows_[size_t(group[j])];
      placeJoinedRow(group[j],
                     JoinedRow{int64_t(j), placed.promptLength, apart[j].pad, groupLongest},
                     placed.pad, half);
    }
  }
  promptLogitsKept_ = true;
  return true;
}

} // namespace onnxc::runtime
