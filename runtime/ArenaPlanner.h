//===- runtime/ArenaPlanner.h - Placing intermediates in one arena ---------===//
//
// Intermediates whose lifetimes (inclusive step ranges) do not overlap may
// share bytes. The planner places the largest first, each into the smallest
// gap left by the already placed buffers it overlaps in time (best fit), or
// above all of them when no gap fits. Offsets are 64-byte aligned so every
// kernel can use aligned vector loads and no two buffers share a cache line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace onnxc::runtime {

inline constexpr size_t kArenaAlignment = 64;

/// One buffer to place: its size and the steps it is live in.
struct ArenaRequest {
  size_t sizeBytes;
  int32_t firstStep, lastStep;
};

struct ArenaPlan {
  std::vector<size_t> offsets; ///< One per request, in request order.
  size_t totalBytes = 0;       ///< A multiple of kArenaAlignment.
};

/// Plans the requests into one arena; nullopt if the total overflows size_t.
std::optional<ArenaPlan> planArena(const std::vector<ArenaRequest> &requests);

} // namespace onnxc::runtime
