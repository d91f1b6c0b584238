//===- tests/unit/runtime/KvCacheTensorScatterTest.cpp - Fixed-length caches in place ===//
//
// Opset 24's decoder keeps a cache of fixed length: present =
// TensorScatter(past, new, write_indices), of the past's shape, and the
// attention reads the present. Compiled, the pair is declared
// (codegen/lower/CachePairs.h), so the runtime may bind past and present to
// one buffer and a step writes only the new rows. Steps run that way must
// give what the reference evaluator gives for the same dense past, with the
// cache's own length symbolic or constant, with the session's capacity left
// at the default or set (then the layout has more rows than the cache,
// which nothing may touch).
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "ir/eval/Evaluator.h"
#include "onnxc/onnxc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace onnxc::lowertest {
namespace {

constexpr int64_t kBatch = 2, kHeads = 2, kSize = 8, kLength = 12;
constexpr float kSentinel = 12345.0f;

/// A decoder layer's attention over a fixed cache of `length` positions
/// ("n" or a number): the new keys and values scattered at each row's write
/// index, the attention reading the presents with a mask of the valid keys.
std::string scatterGraph(const std::string &length) {
  std::string cache = "f32[b, 2, " + length + ", 8]";
  GraphText g;
  g.input("q", "f32[b, 2, s, 8]").input("kin", "f32[b, 2, s, 8]").input("v", "f32[b, 2, s, 8]");
  g.input("past_k", cache).input("past_v", cache).input("w", "i64[b]");
  g.input("mask", "bool[b, 1, s, " + length + "]");
  g.constant("%two: f32[] = dense<2.0>");
  g.node("%k = Mul(%kin, %two)");
  g.node("%present_k = TensorScatter(%past_k, %k, %w)");
  g.node("%present_v = TensorScatter(%past_v, %v, %w)");
  g.output("y", "f32[b, 2, s, 8]", "Attention(%q, %present_k, %present_v, %mask) {scale = 0.3}");
  g.output("present_k", cache).output("present_v", cache);
  return g.str();
}

onnxc_tensor tensorOf(void *data, DType dtype, std::vector<int64_t> dims, size_t bytes = 0) {
  onnxc_tensor t{};
  t.data = data;
  t.dtype = dtype == DType::F32 ? ONNXC_F32 : dtype == DType::I64 ? ONNXC_I64 : ONNXC_BOOL;
  t.rank = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    t.dims[i] = dims[i];
  t.size_bytes = bytes;
  return t;
}

/// The cache's kLength rows per head of a buffer laid out for `rows`.
Tensor denseRows(const std::vector<float> &buffer, int64_t rows) {
  Tensor t(DType::F32, {kBatch, kHeads, kLength, kSize});
  for (int64_t h = 0; h < kBatch * kHeads; ++h)
    std::memcpy(t.data<float>() + h * kLength * kSize, buffer.data() + h * rows * kSize,
                size_t(kLength * kSize) * sizeof(float));
  return t;
}

void expectNear(const Tensor &actual, const Tensor &expected, const std::string &what) {
  ASSERT_EQ(actual.dims(), expected.dims()) << what;
  int reported = 0;
  for (int64_t i = 0; i < expected.numElements() && reported < 5; ++i) {
    double a = actual.elementAsDouble(i), e = expected.elementAsDouble(i);
    if (std::fabs(a - e) > 1e-5 + 1e-4 * std::fabs(e)) {
      ADD_FAILURE() << what << "[" << i << "]: " << a << " vs " << e;
      ++reported;
    }
  }
}

/// Decode steps of `lengths` new positions, row 1 one position ahead of
/// row 0, with one buffer per cache bound as past and present; `capacity`
/// 0 leaves the session's default (the cache's own length).
void runInPlace(const Graph &graph, const onnxc_model_descriptor *model, int64_t capacity,
                const std::vector<int64_t> &lengths) {
  onnxc_session *session = onnxc_session_create(model, 1);
  ASSERT_TRUE(session);
  ASSERT_EQ(onnxc_session_set_cache_capacity(session, capacity), 0);
  const int64_t rows = capacity > 0 ? capacity : kLength;
  // The cache's rows start random (a fixed cache holds whatever it held);
  // rows past its length, in a larger layout, hold the sentinel.
  std::vector<float> cacheK(size_t(kBatch * kHeads * rows * kSize), kSentinel), cacheV = cacheK;
  Tensor start = randomOf(DType::F32, {kBatch, kHeads, kLength, kSize}, 50);
  for (int64_t h = 0; h < kBatch * kHeads; ++h)
    for (std::vector<float> *cache : {&cacheK, &cacheV})
      std::memcpy(cache->data() + h * rows * kSize, start.data<float>() + h * kLength * kSize,
                  size_t(kLength * kSize) * sizeof(float));
  const size_t cacheBytes = cacheK.size() * sizeof(float);
  int64_t position = 0;
  unsigned seed = 100;
  for (int64_t s : lengths) {
    SCOPED_TRACE("position " + std::to_string(position) + ", " + std::to_string(s) +
                 " new, capacity " + std::to_string(capacity));
    Tensor q = randomOf(DType::F32, {kBatch, kHeads, s, kSize}, seed++);
    Tensor k = randomOf(DType::F32, {kBatch, kHeads, s, kSize}, seed++);
    Tensor v = randomOf(DType::F32, {kBatch, kHeads, s, kSize}, seed++);
    Tensor w = Tensor::fromVector<int64_t>({kBatch}, {position, position + 1});
    Tensor mask(DType::Bool, {kBatch, 1, s, kLength});
    for (int64_t r = 0; r < kBatch; ++r)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < kLength; ++j)
          mask.data<uint8_t>()[(r * s + i) * kLength + j] = j <= position + r + i;
    std::vector<Tensor> expected = evaluateGraph(graph, {{"q", q},
                                                         {"kin", k},
                                                         {"v", v},
                                                         {"past_k", denseRows(cacheK, rows)},
                                                         {"past_v", denseRows(cacheV, rows)},
                                                         {"w", w},
                                                         {"mask", mask}});
    std::vector<float> y(size_t(kBatch * kHeads * s * kSize));
    const std::vector<int64_t> cacheDims = {kBatch, kHeads, kLength, kSize};
    onnxc_tensor in[7] = {tensorOf(q.rawData(), DType::F32, {kBatch, kHeads, s, kSize}),
                          tensorOf(k.rawData(), DType::F32, {kBatch, kHeads, s, kSize}),
                          tensorOf(v.rawData(), DType::F32, {kBatch, kHeads, s, kSize}),
                          tensorOf(cacheK.data(), DType::F32, cacheDims, cacheBytes),
                          tensorOf(cacheV.data(), DType::F32, cacheDims, cacheBytes),
                          tensorOf(w.rawData(), DType::I64, {kBatch}),
                          tensorOf(mask.rawData(), DType::Bool, {kBatch, 1, s, kLength})};
    onnxc_tensor out[3] = {tensorOf(y.data(), DType::F32, {}, y.size() * sizeof(float)),
                           tensorOf(cacheK.data(), DType::F32, {}, cacheBytes),
                           tensorOf(cacheV.data(), DType::F32, {}, cacheBytes)};
    ASSERT_EQ(onnxc_session_run(session, in, 7, out, 3), 0) << onnxc_session_error(session);
    ASSERT_EQ(out[1].data, cacheK.data());
    expectNear(Tensor::fromBytes(DType::F32, {kBatch, kHeads, s, kSize}, y.data(),
                                 y.size() * sizeof(float)),
               expected[0], "y in place vs reference");
    expectNear(denseRows(cacheK, rows), expected[1], "present_k in place vs reference");
    expectNear(denseRows(cacheV, rows), expected[2], "present_v in place vs reference");
    for (const std::vector<float> *cache : {&cacheK, &cacheV})
      for (int64_t h = 0; h < kBatch * kHeads; ++h)
        for (int64_t r = kLength; r < rows; ++r)
          ASSERT_EQ((*cache)[size_t((h * rows + r) * kSize)], kSentinel) << "head " << h;
    position += s;
  }
  onnxc_session_destroy(session);
}

TEST(KvCacheTensorScatter, PairsAreDeclaredForSymbolicAndConstantLengths) {
  for (const std::string length : {"n", "12"}) {
    SCOPED_TRACE(length);
    auto graph = parseGraph(scatterGraph(length));
    ModelPlan plan = lowerOnly(*graph);
    ASSERT_EQ(plan.cachePairs.size(), 2u);
    EXPECT_TRUE(plan.cacheNotes.empty());
    EXPECT_EQ(plan.cachePairs[0].axis, 2);
    EXPECT_EQ(plan.inputs[plan.cachePairs[0].input].name, "past_k");
    EXPECT_EQ(plan.outputs[plan.cachePairs[0].output].name, "present_k");
    EXPECT_EQ(plan.symbols[plan.cachePairs[0].capacitySymbol].name,
              length == "n" ? "n_capacity" : "cache_length_12_capacity");
  }
}

TEST(KvCacheTensorScatter, StepsInOneBufferMatchTheReference) {
  for (const std::string length : {"n", "12"}) {
    SCOPED_TRACE(length);
    auto graph = parseGraph(scatterGraph(length));
    std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
    ASSERT_EQ(model->descriptor()->num_cache_pairs, 2);
    // A prompt, decode steps, a step of several positions that fills the
    // cache (row 1 starts one ahead: 4 + 1 + 1 + 5 + 1 = 12).
    runInPlace(*graph, model->descriptor(), 0, {4, 1, 1, 5});
    runInPlace(*graph, model->descriptor(), 20, {4, 1, 1, 5});
  }
}

TEST(KvCacheTensorScatter, APresentReadByAnythingElseKeepsTwoBuffers) {
  GraphText g;
  g.input("kin", "f32[b, 2, s, 8]").input("past_k", "f32[b, 2, n, 8]").input("w", "i64[b]");
  g.node("%present_k = TensorScatter(%past_k, %kin, %w)");
  g.output("present_k", "f32[b, 2, n, 8]");
  g.output("sum", "f32[]", "ReduceSum(%present_k) {keepdims = 0}");
  auto graph = parseGraph(g.str());
  ModelPlan plan = lowerOnly(*graph);
  EXPECT_TRUE(plan.cachePairs.empty());
  ASSERT_EQ(plan.cacheNotes.size(), 1u);
  EXPECT_NE(plan.cacheNotes[0].find("cache 'past_k' -> 'present_k' keeps two buffers: the present "
                                    "is also read by"),
            std::string::npos)
      << plan.cacheNotes[0];
  expectCompiledMatchesReference(*graph, {{"kin", randomOf(DType::F32, {1, 2, 2, 8}, 1)},
                                          {"past_k", randomOf(DType::F32, {1, 2, 5, 8}, 2)},
                                          {"w", Tensor::fromVector<int64_t>({1}, {3})}});
}

} // namespace
} // namespace onnxc::lowertest
