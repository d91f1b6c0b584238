//===- runtime/ArenaPlanner.cpp - Placing intermediates in one arena -------===//
#include "ArenaPlanner.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

namespace onnxc::runtime {

namespace {

bool alignUp(size_t size, size_t &aligned) {
  if (size > std::numeric_limits<size_t>::max() - (kArenaAlignment - 1))
    return false;
  aligned = (size + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  return true;
}

bool liveTogether(const ArenaRequest &a, const ArenaRequest &b) {
  return a.firstStep <= b.lastStep && b.firstStep <= a.lastStep;
}

/// The lowest-waste offset for `size` bytes among the `busy` ranges (sorted
/// by start): the smallest gap that fits, else just above the highest one.
size_t bestFitOffset(const std::vector<std::pair<size_t, size_t>> &busy, size_t size) {
  std::optional<size_t> best;
  size_t bestGap = std::numeric_limits<size_t>::max();
  size_t cursor = 0;
  for (auto [begin, end] : busy) {
    if (begin > cursor) {
      size_t gap = begin - cursor;
      if (gap >= size && gap < bestGap) {
        best = cursor;
        bestGap = gap;
      }
    }
    cursor = std::max(cursor, end);
  }
  return best.value_or(cursor);
}

} // namespace

std::optional<ArenaPlan> planArena(const std::vector<ArenaRequest> &requests) {
  size_t count = requests.size();
  std::vector<size_t> alignedSizes(count);
  for (size_t i = 0; i < count; ++i)
    if (!alignUp(requests[i].sizeBytes, alignedSizes[i]))
      return std::nullopt;

  // Largest first, ties by start of life, so plans are deterministic.
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (alignedSizes[a] != alignedSizes[b])
      return alignedSizes[a] > alignedSizes[b];
    return requests[a].firstStep < requests[b].firstStep;
  });

  ArenaPlan plan;
  plan.offsets.assign(count, 0);
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;
  for (size_t index : order) {
    size_t size = alignedSizes[index];
    if (size == 0)
      continue; // Nothing reads or writes it; offset 0 is as good as any.
    busy.clear();
    for (size_t other : placed)
      if (liveTogether(requests[index], requests[other]))
        busy.emplace_back(plan.offsets[other], plan.offsets[other] + alignedSizes[other]);
    std::sort(busy.begin(), busy.end());
    size_t offset = bestFitOffset(busy, size);
    if (offset > std::numeric_limits<size_t>::max() - size)
      return std::nullopt;
    plan.offsets[index] = offset;
    plan.totalBytes = std::max(plan.totalBytes, offset + size);
    placed.push_back(index);
  }
  return plan;
}

} // namespace onnxc::runtime
