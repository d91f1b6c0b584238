//===- tests/unit/passes/PassManagerTest.cpp - Pass infrastructure and pipelines -===//
#include "passes/PassManager.h"
#include "ir/Error.h"
#include "ir/Graph.h"
#include "passes/PassRegistry.h"
#include "passes/Pipelines.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace onnxc;

namespace {

// Counts its runs and reports a change for the first `changes` of them.
class CountingPass : public Pass {
public:
  CountingPass(int changes, int *runs) : changes_(changes), runs_(runs) {}
  std::string_view name() const override { return "counting"; }
  std::string_view description() const override { return "counts"; }
  bool run(Graph &, PassContext &context) override {
    ++*runs_;
    context.count("runs");
    return *runs_ <= changes_;
  }

private:
  int changes_;
  int *runs_;
};

} // namespace

TEST(PassRegistry, ListsBuiltinPasses) {
  for (const char *name : {"dce", "fold-constants", "cse", "remove-identity"}) {
    ASSERT_NE(findPass(name), nullptr) << name;
    EXPECT_EQ(createPass(name)->name(), name);
    EXPECT_FALSE(findPass(name)->description.empty());
  }
  EXPECT_THROW(createPass("no-such-pass"), Error);
  EXPECT_NE(passListing().find("  dce "), std::string::npos);
}

TEST(PassContext, StatisticsLine) {
  Graph g;
  Node *n = g.createNode(OpKind::Relu, {}, 1, "r");
  PassContext context("fuse-x", /*explaining=*/true);
  context.count("matched", 2);
  context.reject(*n, "mask is not constant");
  context.reject(*n, "mask is not constant");
  EXPECT_EQ(context.statisticsLine(), "fuse-x: 2 matched, 2 rejected (2 mask is not constant)");
  ASSERT_EQ(context.explanations().size(), 1u) << "repeated explanations are dropped";
  EXPECT_EQ(context.explanations()[0], "fuse-x: node 'r': mask is not constant");

  PassContext quiet("fuse-x");
  quiet.reject(*n, "reason");
  EXPECT_TRUE(quiet.explanations().empty());
  EXPECT_EQ(quiet.counter("rejected"), 1);
}

TEST(PassManager, FixedPointGroupStopsWhenNothingChanges) {
  Graph g;
  int runs = 0;
  PassManager pm;
  std::vector<std::unique_ptr<Pass>> group;
  group.push_back(std::make_unique<CountingPass>(2, &runs));
  pm.addFixedPointGroup(std::move(group), 10);
  EXPECT_TRUE(pm.run(g));
  EXPECT_EQ(runs, 3); // two rounds with changes, one without
  ASSERT_NE(pm.context("counting"), nullptr);
  EXPECT_EQ(pm.context("counting")->counter("runs"), 3);
  std::ostringstream stats;
  pm.printStatistics(stats);
  EXPECT_EQ(stats.str(), "counting: 3 runs\n");
}

TEST(PassManager, FixedPointGroupIsCapped) {
  Graph g;
  int runs = 0;
  PassManager pm;
  std::vector<std::unique_ptr<Pass>> group;
  group.push_back(std::make_unique<CountingPass>(100, &runs));
  pm.addFixedPointGroup(std::move(group), 4);
  pm.run(g);
  EXPECT_EQ(runs, 4);
}

TEST(PassManager, ProgressSeesEachPassAndRoundAndCanStop) {
  Graph g;
  int runs = 0;
  std::vector<ProgressEvent> events;
  PassManagerOptions options;
  options.progress = [&](const ProgressEvent &event) {
    events.push_back(event);
    return true;
  };
  PassManager pm(options);
  pm.addPass("dce");
  std::vector<std::unique_ptr<Pass>> group;
  group.push_back(std::make_unique<CountingPass>(2, &runs));
  pm.addFixedPointGroup(std::move(group), 10);
  pm.run(g);
  // dce, then three rounds of the group: a total that grows with the rounds.
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].detail, "dce");
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].stage, CompileStage::Passes);
    EXPECT_EQ(events[i].done, int64_t(i));
    EXPECT_LT(events[i].done, events[i].total);
  }
  EXPECT_EQ(events.back().detail, "counting");
  EXPECT_EQ(events.back().total, 4);

  // A false answer stops before the pass it was told about, with Interrupted
  // (not an Error the pass manager would name a pass in).
  runs = 0;
  options.progress = [&](const ProgressEvent &event) { return event.detail != "counting"; };
  PassManager stopping(options);
  stopping.addPass("dce");
  stopping.addPass(std::make_unique<CountingPass>(0, &runs));
  EXPECT_THROW(stopping.run(g), Interrupted);
  EXPECT_EQ(runs, 0);
}

TEST(PassManager, UnknownPrintAfterPassIsAnError) {
  PassManagerOptions options;
  options.printIrAfter = {"no-such-pass"};
  EXPECT_THROW(PassManager pm(options), Error);
}

TEST(PassManager, PassErrorsNameThePass) {
  class Failing : public Pass {
    std::string_view name() const override { return "failing"; }
    std::string_view description() const override { return "fails"; }
    bool run(Graph &, PassContext &) override { fail("node 'n': broken"); }
  };
  Graph g;
  PassManager pm;
  pm.addPass(std::make_unique<Failing>());
  try {
    pm.run(g);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "pass 'failing': node 'n': broken");
  }
}

TEST(Pipelines, Levels) {
  for (int level = 0; level <= 3; ++level) {
    PassManager pm;
    addOptimizationPipeline(pm, level);
    std::vector<std::string> expected;
    // Half-precision graphs are widened first, so every later pass sees f32.
    if (level > 0)
      expected = {"widen-half-precision"};
    // QDQ graphs' rewrites come before any folding (fold-constants would
    // fold the quantized weights' DequantizeLinear), int4 weights first.
    if (level > 1)
      expected.insert(expected.end(),
                      {"fuse-block-quantized-matmul", "fuse-static-quantized-matmul",
                       "fuse-static-quantized-conv", "sink-dequantize", "expand-fake-quantize"});
    if (level > 0)
      expected.insert(expected.end(), {"fold-constants", "inline-constant-if",
                                       "fold-channel-affine", "remove-identity", "simplify-casts",
                                       "simplify-shapes", "simplify-transposes", "cse", "dce"});
    // (Each pass is listed once, though the cleanup runs again between.)
    if (level > 1)
      for (const char *fusion :
           {"fuse-dynamic-quantized-matmul", "lift-batched-heads", "split-packed-qkv",
            "batch-first-heads", "group-repeated-kv", "expand-xsoftmax", "fuse-attention",
            "group-attention-kv", "fold-seq-first-attention", "fuse-additive-attention",
            "fuse-layernorm", "fuse-rmsnorm", "fuse-skip-layernorm", "fuse-gelu"})
        expected.push_back(fusion);
    EXPECT_EQ(pm.passNames(), expected) << "-O" << level;
  }
  PassManager pm;
  EXPECT_THROW(addOptimizationPipeline(pm, 4), Error);
  EXPECT_EQ(splitPassList("a,,b,"), (std::vector<std::string>{"a", "b"}));
}

TEST(Pipelines, O1CleansUpAGraph) {
  // x -> Identity -> Relu, twice (CSE after identity removal), plus a dead Neg.
  Graph g;
  Value *x = g.addInput("x", {DType::F32, Shape::fromConstants({4})});
  Node *id = g.createNode(OpKind::Identity, {x}, 1, "id", {"i"});
  Node *r1 = g.createNode(OpKind::Relu, {id->result()}, 1, "r1", {"r1"});
  Node *r2 = g.createNode(OpKind::Relu, {x}, 1, "r2", {"r2"});
  g.createNode(OpKind::Neg, {x}, 1, "dead", {"n"});
  Node *add = g.createNode(OpKind::Add, {r1->result(), r2->result()}, 1, "add", {"y"});
  g.addOutput("y", add->result());
  PassManager pm;
  addOptimizationPipeline(pm, 1);
  EXPECT_TRUE(pm.run(g));
  EXPECT_EQ(g.numNodes(), 2u); // one Relu, the Add
  EXPECT_EQ(pm.context("remove-identity")->counter("removed"), 1);
  EXPECT_EQ(pm.context("cse")->counter("merged"), 1);
  EXPECT_EQ(pm.context("dce")->counter("removed"), 1);
}
