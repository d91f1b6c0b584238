//===- tests/unit/runtime/CompiledConcurrencyTest.cpp - One model, many threads ----===//
//
// A compiled model is shared read-only (kernels, packed weights); each
// thread runs it through a session of its own. Runs from several threads at
// once, with different batch sizes and runtime thread counts, must give
// bit-identical results to a lone run: no shared scratch, no races in the
// arena or the thread pools.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "driver/CompiledSession.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace onnxc {
namespace {

using lowertest::parseGraph;
using lowertest::randomOf;

// An encoder-like block: projection with bias, GELU-ish activation, a
// residual, softmax over the last axis, and a transpose + reduction.
constexpr const char *BlockIr = R"(
graph @block(%x: f32[batch, 48]) -> (%p: f32[batch, 48], %m: f32[48]) {
  const %w: f32[48, 48] = dense<SPLAT>
  const %b: f32[48] = dense<BIAS>
  %h = MatMul(%x, %w)
  %a = Add(%h, %b)
  %t = Tanh(%a)
  %r = Add(%t, %x)
  %p = Softmax(%r) {axis = -1}
  %q = Transpose(%p) {perm = [1, 0]}
  %m = ReduceMean(%q) {axes = [1], keepdims = 0}
  return %p, %m
}
)";

std::string blockIr() {
  // Deterministic weights written into the text.
  std::string weights, bias;
  for (int i = 0; i < 48 * 48; ++i)
    weights += (i ? ", " : "") + std::to_string(((i * 37) % 101 - 50) / 400.0);
  for (int i = 0; i < 48; ++i)
    bias += (i ? ", " : "") + std::to_string(((i * 13) % 17 - 8) / 20.0);
  std::string text = BlockIr;
  text.replace(text.find("SPLAT"), 5, "[" + weights + "]");
  text.replace(text.find("BIAS"), 4, "[" + bias + "]");
  return text;
}

bool identical(const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dims() != b[i].dims() || a[i].byteSize() != b[i].byteSize() ||
        std::memcmp(a[i].rawData(), b[i].rawData(), a[i].byteSize()) != 0)
      return false;
  return true;
}

TEST(CompiledConcurrency, ThreadsWithTheirOwnSessionsGetIdenticalResults) {
  auto graph = parseGraph(blockIr());
  std::unique_ptr<JitModel> model = compileModelJit(*graph, TargetSelection::select({}));
  const int64_t batches[] = {1, 7, 64, 301};
  std::vector<Tensor> inputs;
  std::vector<std::vector<Tensor>> expected;
  for (int64_t batch : batches) {
    inputs.push_back(randomOf(DType::F32, {batch, 48}, unsigned(batch)));
    CompiledSession lone(model->descriptor(), 1);
    expected.push_back(lone.run({&inputs.back()}));
  }

  constexpr int Threads = 6, Rounds = 25;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < Threads; ++t)
    threads.emplace_back([&, t] {
      // Runtime pools of 1 and 2 threads; every thread cycles through all
      // batch sizes, starting at a different one.
      CompiledSession session(model->descriptor(), 1 + t % 2);
      for (int round = 0; round < Rounds; ++round) {
        size_t which = size_t(t + round) % std::size(batches);
        if (!identical(session.run({&inputs[which]}), expected[which]))
          ++mismatches;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  // And the compiled result is right, not just repeatable.
  lowertest::expectCompiledMatchesReference(*graph, {{"x", inputs[2]}});
}

} // namespace
} // namespace onnxc
