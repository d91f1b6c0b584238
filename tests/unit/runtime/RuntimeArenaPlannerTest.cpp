//===- tests/unit/runtime/RuntimeArenaPlannerTest.cpp - Lifetime-based placement ---===//
#include "runtime/ArenaPlanner.h"

#include <gtest/gtest.h>

#include <random>

using namespace onnxc::runtime;

namespace {

/// No two buffers that are live in the same step may share a byte.
void expectValidPlan(const std::vector<ArenaRequest> &requests, const ArenaPlan &plan) {
  ASSERT_EQ(plan.offsets.size(), requests.size());
  EXPECT_EQ(plan.totalBytes % kArenaAlignment, 0u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kArenaAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + requests[i].sizeBytes, plan.totalBytes);
    for (size_t j = i + 1; j < requests.size(); ++j) {
      const ArenaRequest &a = requests[i], &b = requests[j];
      bool together = a.firstStep <= b.lastStep && b.firstStep <= a.lastStep;
      bool disjoint = plan.offsets[i] + a.sizeBytes <= plan.offsets[j] ||
                      plan.offsets[j] + b.sizeBytes <= plan.offsets[i];
      if (together && a.sizeBytes && b.sizeBytes) {
        EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j;
      }
    }
  }
}

} // namespace

TEST(RuntimeArenaPlanner, ChainReusesDeadBuffers) {
  // a -> b -> c -> d: only neighbours are live together, so two slots do.
  std::vector<ArenaRequest> requests = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  std::optional<ArenaPlan> plan = planArena(requests);
  ASSERT_TRUE(plan);
  expectValidPlan(requests, *plan);
  EXPECT_EQ(plan->totalBytes, 2 * 1024u);
}

TEST(RuntimeArenaPlanner, SmallBuffersFillGapsBelowLiveOnes) {
  // The 4096-byte buffer dies after step 0; the short-lived 1024s and then
  // the 512 slot into its bytes underneath the 2048 that is still live.
  std::vector<ArenaRequest> requests = {
      {4096, 0, 0}, {2048, 0, 2}, {1024, 1, 1}, {1024, 2, 2}, {512, 1, 2}};
  std::optional<ArenaPlan> plan = planArena(requests);
  ASSERT_TRUE(plan);
  expectValidPlan(requests, *plan);
  EXPECT_EQ(plan->offsets, (std::vector<size_t>{0, 4096, 0, 0, 1024}));
  EXPECT_EQ(plan->totalBytes, 4096u + 2048u);
}

TEST(RuntimeArenaPlanner, AlignsAndHandlesEmpty) {
  std::vector<ArenaRequest> requests = {{1, 0, 0}, {0, 0, 0}, {65, 0, 0}};
  std::optional<ArenaPlan> plan = planArena(requests);
  ASSERT_TRUE(plan);
  expectValidPlan(requests, *plan);
  EXPECT_EQ(plan->totalBytes, 64u + 128u);
  EXPECT_EQ(planArena({})->totalBytes, 0u);
}

TEST(RuntimeArenaPlanner, OverflowIsReported) {
  size_t huge = std::numeric_limits<size_t>::max() / 2;
  EXPECT_FALSE(planArena({{huge, 0, 0}, {huge, 0, 0}, {huge, 0, 0}}));
  EXPECT_FALSE(planArena({{std::numeric_limits<size_t>::max(), 0, 0}}));
}

TEST(RuntimeArenaPlanner, RandomLifetimesNeverOverlap) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<ArenaRequest> requests;
    size_t sum = 0;
    for (int i = 0; i < 40; ++i) {
      int32_t first = int32_t(random() % 30);
      int32_t last = first + int32_t(random() % 6);
      size_t size = random() % 5000;
      requests.push_back({size, first, last});
      sum += (size + 63) / 64 * 64;
    }
    std::optional<ArenaPlan> plan = planArena(requests);
    ASSERT_TRUE(plan);
    expectValidPlan(requests, *plan);
    EXPECT_LT(plan->totalBytes, sum);
  }
}
