//===- tests/unit/runtime/KvCacheInPlaceTest.cpp - KV caches updated in place ------===//
//
// A decoder's present = Concat(past, new) (or an Attention's own present)
// compiled as a cache pair (codegen/lower/CachePairs.h): the runtime binds
// past and present to one buffer of a capacity, and a step writes only the
// new rows. Steps run in place must give what the same model gives with two
// dense buffers and what the reference evaluator gives, and must leave the
// rows past the used length alone.
//
//===----------------------------------------------------------------------===//
#include "KvCacheTestModel.h"
#include "LoweringTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "ir/eval/Evaluator.h"
#include "onnxc/onnxc.h"
#include "onnxc/onnxc_generate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace onnxc::lowertest {
namespace {

constexpr int64_t kHeads = 2, kSize = 8;
/// The batch of the current runInPlace (the runtime's layout is [batch, heads, capacity, size]).
int64_t gBatch = 1;

/// Sets gBatch for one scope, so a test cannot leave it changed for the next.
struct BatchScope {
  explicit BatchScope(int64_t batch) { gBatch = batch; }
  ~BatchScope() { gBatch = 1; }
};
constexpr float kSentinel = 12345.0f;

/// The fused form of a GPT-style block after a KV cache: the attention reads
/// the past and the new keys apart, the Concat builds the present.
std::string concatGraph() {
  GraphText g;
  g.input("q", "f32[b, 2, s, 8]").input("kin", "f32[b, 2, s, 8]").input("v", "f32[b, 2, s, 8]");
  g.input("past_k", "f32[b, 2, p, 8]").input("past_v", "f32[b, 2, p, 8]");
  g.constant("%two: f32[] = dense<2.0>");
  g.node("%k = Mul(%kin, %two)");
  g.node("%y = Attention(%q, %k, %v, _, %past_k, %past_v) {is_causal = 1}");
  g.node("%pk_shape = Shape(%past_k)");
  g.output("y", "f32[b, 2, s, 8]");
  g.output("present_k", "f32[b, 2, t, 8]", "Concat(%past_k, %k) {axis = 2}");
  g.output("present_v", "f32[b, 2, t, 8]", "Concat(%past_v, %v) {axis = 2}");
  return g.str();
}

/// HF LLaMA's form: the attention reads the whole cache from the presents.
std::string presentReadGraph() {
  GraphText g;
  g.input("q", "f32[b, 2, s, 8]").input("kin", "f32[b, 2, s, 8]").input("v", "f32[b, 2, s, 8]");
  g.input("past_k", "f32[b, 2, p, 8]").input("past_v", "f32[b, 2, p, 8]");
  g.constant("%two: f32[] = dense<2.0>");
  g.node("%k = Mul(%kin, %two)");
  g.node("%present_k = Concat(%past_k, %k) {axis = 2}");
  g.node("%present_v = Concat(%past_v, %v) {axis = 2}");
  g.output("y", "f32[b, 2, s, 8]", "Attention(%q, %present_k, %present_v) {scale = 0.3}");
  g.output("present_k", "f32[b, 2, t, 8]").output("present_v", "f32[b, 2, t, 8]");
  return g.str();
}

/// Opset 23's own cache: the Attention writes present_key / present_value.
std::string attentionPresentGraph() {
  GraphText g;
  g.input("q", "f32[b, 2, s, 8]").input("kin", "f32[b, 2, s, 8]").input("v", "f32[b, 2, s, 8]");
  g.input("past_k", "f32[b, 2, p, 8]").input("past_v", "f32[b, 2, p, 8]");
  g.node("%y, %present_k, %present_v = Attention(%q, %kin, %v, _, %past_k, %past_v) "
         "{is_causal = 1}");
  g.output("y", "f32[b, 2, s, 8]").output("present_k", "f32[b, 2, t, 8]");
  g.output("present_v", "f32[b, 2, t, 8]");
  return g.str();
}

/// [1, heads, rows, size] of `capacity` rows per head, every element `fill`.
std::vector<float> cacheBuffer(int64_t capacity) {
  return std::vector<float>(size_t(gBatch * kHeads * capacity * kSize), kSentinel);
}

/// The first `rows` rows of each head of a cache laid out for `capacity`.
Tensor denseRows(const float *cache, int64_t capacity, int64_t rows) {
  Tensor t(DType::F32, {gBatch, kHeads, rows, kSize});
  for (int64_t h = 0; h < gBatch * kHeads; ++h)
    std::memcpy(t.data<float>() + h * rows * kSize, cache + h * capacity * kSize,
                size_t(rows * kSize) * sizeof(float));
  return t;
}

onnxc_tensor tensorOf(void *data, std::vector<int64_t> dims, size_t bytes = 0) {
  onnxc_tensor t{};
  t.data = data;
  t.dtype = ONNXC_F32;
  t.rank = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    t.dims[i] = dims[i];
  t.size_bytes = bytes;
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

/// Runs a generation of `lengths` new tokens per step through a session
/// with cache capacity `capacity`, past and present bound to one buffer per
/// pair; each step against a dense two-buffer session and the evaluator.
void runInPlace(const Graph &graph, const onnxc_model_descriptor *model, int64_t capacity,
                const std::vector<int64_t> &lengths) {
  onnxc_session *inPlace = onnxc_session_create(model, 1);
  onnxc_session *dense = onnxc_session_create(model, 1);
  ASSERT_TRUE(inPlace && dense);
  ASSERT_EQ(onnxc_session_set_cache_capacity(inPlace, capacity), 0);
  std::vector<float> cacheK = cacheBuffer(capacity), cacheV = cacheBuffer(capacity);
  const size_t cacheBytes = cacheK.size() * sizeof(float);
  Tensor pastK(DType::F32, {gBatch, kHeads, 0, kSize}), pastV = pastK;
  int64_t past = 0;
  unsigned seed = 100;
  for (int64_t s : lengths) {
    SCOPED_TRACE("past " + std::to_string(past) + ", " + std::to_string(s) + " new, capacity " +
                 std::to_string(capacity));
    Tensor q = randomOf(DType::F32, {gBatch, kHeads, s, kSize}, seed++);
    Tensor k = randomOf(DType::F32, {gBatch, kHeads, s, kSize}, seed++);
    Tensor v = randomOf(DType::F32, {gBatch, kHeads, s, kSize}, seed++);
    std::vector<Tensor> expected = evaluateGraph(
        graph, {{"q", q}, {"kin", k}, {"v", v}, {"past_k", pastK}, {"past_v", pastV}});

    // Two dense buffers, no capacity: exactly the model's old behaviour.
    std::vector<float> y(size_t(gBatch * kHeads * s * kSize)),
        denseK(size_t(gBatch * kHeads * (past + s) * kSize)), denseV(denseK.size());
    onnxc_tensor denseIn[5] = {tensorOf(q.rawData(), {gBatch, kHeads, s, kSize}),
                               tensorOf(k.rawData(), {gBatch, kHeads, s, kSize}),
                               tensorOf(v.rawData(), {gBatch, kHeads, s, kSize}),
                               tensorOf(pastK.rawData(), {gBatch, kHeads, past, kSize}),
                               tensorOf(pastV.rawData(), {gBatch, kHeads, past, kSize})};
    onnxc_tensor denseOut[3] = {tensorOf(y.data(), {}, y.size() * sizeof(float)),
                                tensorOf(denseK.data(), {}, denseK.size() * sizeof(float)),
                                tensorOf(denseV.data(), {}, denseV.size() * sizeof(float))};
    ASSERT_EQ(onnxc_session_run(dense, denseIn, 5, denseOut, 3), 0) << onnxc_session_error(dense);

    // One buffer per pair, bound as both past and present.
    std::vector<float> yInPlace(y.size());
    onnxc_tensor in[5] = {denseIn[0], denseIn[1], denseIn[2],
                          tensorOf(cacheK.data(), {gBatch, kHeads, past, kSize}, cacheBytes),
                          tensorOf(cacheV.data(), {gBatch, kHeads, past, kSize}, cacheBytes)};
    onnxc_tensor out[3] = {tensorOf(yInPlace.data(), {}, y.size() * sizeof(float)),
                           tensorOf(cacheK.data(), {}, cacheBytes),
                           tensorOf(cacheV.data(), {}, cacheBytes)};
    ASSERT_EQ(onnxc_session_run(inPlace, in, 5, out, 3), 0) << onnxc_session_error(inPlace);
    ASSERT_EQ(out[1].dims[2], past + s);
    ASSERT_EQ(out[1].data, cacheK.data());

    Tensor yTensor = Tensor::fromBytes(DType::F32, {gBatch, kHeads, s, kSize}, yInPlace.data(),
                                       yInPlace.size() * sizeof(float));
    Tensor yDense = Tensor::fromBytes(DType::F32, {gBatch, kHeads, s, kSize}, y.data(),
                                      y.size() * sizeof(float));
    expectNear(yTensor, expected[0], "y in place vs reference");
    expectNear(yTensor, yDense, "y in place vs two buffers");
    Tensor presentK = denseRows(cacheK.data(), capacity, past + s);
    Tensor presentV = denseRows(cacheV.data(), capacity, past + s);
    expectNear(presentK, expected[1], "present_k in place vs reference");
    expectNear(presentV, expected[2], "present_v in place vs reference");
    expectNear(presentK,
               Tensor::fromBytes(DType::F32, {gBatch, kHeads, past + s, kSize}, denseK.data(),
                                 denseK.size() * sizeof(float)),
               "present_k in place vs two buffers");
    // Rows beyond the used length are never written.
    for (const std::vector<float> *cache : {&cacheK, &cacheV})
      for (int64_t h = 0; h < gBatch * kHeads; ++h)
        for (int64_t r = past + s; r < capacity; ++r)
          for (int64_t d = 0; d < kSize; ++d)
            ASSERT_EQ((*cache)[size_t((h * capacity + r) * kSize + d)], kSentinel)
                << "head " << h << " row " << r;
    pastK = expected[1];
    pastV = expected[2];
    past += s;
  }
  onnxc_session_destroy(inPlace);
  onnxc_session_destroy(dense);
}

TEST(KvCacheInPlace, ConcatPairsAreDeclared) {
  auto graph = parseGraph(concatGraph());
  ModelPlan plan = lowerOnly(*graph);
  ASSERT_EQ(plan.cachePairs.size(), 2u);
  for (const PlanCachePair &pair : plan.cachePairs) {
    EXPECT_EQ(pair.axis, 2);
    EXPECT_EQ(plan.symbols[pair.capacitySymbol].name, "p_capacity");
    EXPECT_EQ(plan.symbols[pair.capacitySymbol].input, -1);
    EXPECT_EQ(plan.symbols[pair.pastCapacitySymbol].name, "p_capacity_of_past");
  }
  EXPECT_EQ(plan.inputs[plan.cachePairs[0].input].name, "past_k");
  EXPECT_EQ(plan.outputs[plan.cachePairs[0].output].name, "present_k");
  EXPECT_TRUE(plan.cacheNotes.empty());
}

TEST(KvCacheInPlace, ConcatStepsMatchTwoBuffersAndTheReference) {
  auto graph = parseGraph(concatGraph());
  std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
  ASSERT_EQ(model->descriptor()->num_cache_pairs, 2);
  // A prompt from an empty past, decode steps, a step of several tokens;
  // room to spare, then a capacity filled exactly by the last step.
  runInPlace(*graph, model->descriptor(), 24, {3, 1, 1, 4, 1});
  runInPlace(*graph, model->descriptor(), 10, {3, 1, 1, 4, 1});
  runInPlace(*graph, model->descriptor(), 1, {1});
  // Batch 3: the capacity layout is [batch, heads, capacity, size].
  BatchScope batch(3);
  runInPlace(*graph, model->descriptor(), 12, {3, 1, 4});
}

TEST(KvCacheInPlace, AttentionPresentStepsMatchTwoBuffersAndTheReference) {
  auto graph = parseGraph(attentionPresentGraph());
  std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
  ASSERT_EQ(model->descriptor()->num_cache_pairs, 2);
  runInPlace(*graph, model->descriptor(), 17, {5, 1, 2, 1});
  runInPlace(*graph, model->descriptor(), 9, {5, 1, 2, 1});
  BatchScope batch(2);
  runInPlace(*graph, model->descriptor(), 11, {5, 1, 2});
}

TEST(KvCacheInPlace, AttentionReadingThePresentStepsMatchTwoBuffersAndTheReference) {
  auto graph = parseGraph(presentReadGraph());
  std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
  ASSERT_EQ(model->descriptor()->num_cache_pairs, 2);
  runInPlace(*graph, model->descriptor(), 300, {5, 1, 2, 1, 140});
  runInPlace(*graph, model->descriptor(), 9, {5, 1, 2, 1});
  BatchScope batch(2);
  runInPlace(*graph, model->descriptor(), 40, {5, 1, 20});
}

TEST(KvCacheInPlace, DistinctBuffersStillGetThePastCopied) {
  // With a capacity set but two buffers, the past (in the capacity layout)
  // is copied into the present: the old semantics.
  auto graph = parseGraph(concatGraph());
  std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
  onnxc_session *session = onnxc_session_create(model->descriptor(), 1);
  ASSERT_TRUE(session);
  const int64_t capacity = 6, past = 3;
  ASSERT_EQ(onnxc_session_set_cache_capacity(session, capacity), 0);
  std::vector<float> pastK = cacheBuffer(capacity), pastV = cacheBuffer(capacity);
  for (size_t i = 0; i < pastK.size(); ++i)
    pastK[i] = pastV[i] = float(i % 97) * 0.01f;
  std::vector<float> presentK = cacheBuffer(capacity), presentV = cacheBuffer(capacity);
  Tensor q = randomOf(DType::F32, {gBatch, kHeads, 1, kSize}, 7);
  Tensor k = randomOf(DType::F32, {gBatch, kHeads, 1, kSize}, 8);
  std::vector<float> y(size_t(kHeads * kSize));
  const size_t bytes = pastK.size() * sizeof(float);
  onnxc_tensor in[5] = {tensorOf(q.rawData(), {gBatch, kHeads, 1, kSize}),
                        tensorOf(k.rawData(), {gBatch, kHeads, 1, kSize}),
                        tensorOf(k.rawData(), {gBatch, kHeads, 1, kSize}),
                        tensorOf(pastK.data(), {gBatch, kHeads, past, kSize}, bytes),
                        tensorOf(pastV.data(), {gBatch, kHeads, past, kSize}, bytes)};
  onnxc_tensor out[3] = {tensorOf(y.data(), {}, y.size() * sizeof(float)),
                         tensorOf(presentK.data(), {}, bytes),
                         tensorOf(presentV.data(), {}, bytes)};
  ASSERT_EQ(onnxc_session_run(session, in, 5, out, 3), 0) << onnxc_session_error(session);
  Tensor expected = evaluateGraph(*graph, {{"q", q},
                                           {"kin", k},
                                           {"v", k},
                                           {"past_k", denseRows(pastK.data(), capacity, past)},
                                           {"past_v", denseRows(pastV.data(), capacity, past)}})[1];
  expectNear(denseRows(presentK.data(), capacity, past + 1), expected, "present_k");
  for (int64_t h = 0; h < kHeads; ++h)
    for (int64_t r = past + 1; r < capacity; ++r)
      EXPECT_EQ(presentK[size_t((h * capacity + r) * kSize)], kSentinel);

  // A present longer than the capacity is refused with one line.
  in[3].dims[2] = in[4].dims[2] = capacity;
  EXPECT_NE(onnxc_session_run(session, in, 5, out, 3), 0);
  EXPECT_STREQ(onnxc_session_error(session),
               "output 'present_k' needs 7 positions on axis 2 but the cache capacity is 6 "
               "(onnxc_session_set_cache_capacity)");
  EXPECT_NE(onnxc_session_set_cache_capacity(session, -1), 0);

  // One buffer as past and present without a capacity would be read while
  // it is rewritten: refused.
  ASSERT_EQ(onnxc_session_set_cache_capacity(session, 0), 0);
  in[3].dims[2] = in[4].dims[2] = past;
  in[3].size_bytes = in[4].size_bytes = 0;
  out[1].data = pastK.data();
  EXPECT_NE(onnxc_session_run(session, in, 5, out, 3), 0);
  EXPECT_STREQ(onnxc_session_error(session),
               "input 'past_k' and output 'present_k' share a buffer, which needs a cache capacity "
               "(onnxc_session_set_cache_capacity) to update the cache in place");
  EXPECT_EQ(onnxc_session_cache_pair_of_input(session, 3), 1);
  EXPECT_EQ(onnxc_session_cache_pair_of_input(session, 0), -1);
  onnxc_session_destroy(session);
}

TEST(KvCacheInPlace, GeneratorUpdatesInPlaceAndMatchesTheReferenceLoop) {
  auto graph = parseGraph(kvtest::tinyDecoderText());
  std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
  ASSERT_EQ(model->descriptor()->num_cache_pairs, 2);
  const int count = 40;
  for (int64_t capacity : {int64_t(0), int64_t(43), int64_t(100)}) {
    SCOPED_TRACE("capacity " + std::to_string(capacity));
    onnxc_generate_options options;
    onnxc_generate_options_init(&options);
    options.max_new_tokens = count;
    options.capacity = capacity;
    options.num_threads = 1;
    onnxc_generator *generator = onnxc_generator_create(model->descriptor(), &options);
    ASSERT_NE(generator, nullptr) << onnxc_last_error();
    EXPECT_EQ(onnxc_generator_cache_pairs_in_place(generator), 2);
    EXPECT_EQ(onnxc_generator_state_pairs(generator), 0);
    EXPECT_EQ(onnxc_generator_cache_pairs(generator), 2);
    EXPECT_NE(std::string(onnxc_generator_describe(generator)).find("2 cache pairs"),
              std::string::npos);
    EXPECT_NE(std::string(onnxc_generator_describe(generator)).find(", updated in place"),
              std::string::npos);
    int64_t prompt[] = {3, 9, 4};
    std::vector<int64_t> tokens(count);
    ASSERT_EQ(onnxc_generate(generator, prompt, 3, tokens.data(), count), count)
        << onnxc_generator_error(generator);
    EXPECT_EQ(tokens, kvtest::referenceGreedy(*graph, {3, 9, 4}, count));
    EXPECT_GT(std::set<int64_t>(tokens.begin(), tokens.end()).size(), 3u)
        << "greedy tokens this repetitive would hide a broken cache";
    onnxc_generator_destroy(generator);
  }
}

TEST(KvCacheInPlace, GeneratorPairsTheDeclaredCachesWhateverTheirNames) {
  // Names that say neither past nor present: the descriptor's pairs, which
  // the compiler proved, pair them (by names alone the generator would
  // refuse cache_k_in as an input it cannot fill).
  std::string text = kvtest::tinyDecoderText();
  const std::pair<std::string, std::string> renames[] = {{"past_k", "cache_k_in"},
                                                         {"past_v", "cache_v_in"},
                                                         {"present_k", "cache_k_out"},
                                                         {"present_v", "cache_v_out"}};
  for (const auto &[from, to] : renames)
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, from.size(), to);
  auto renamed = parseGraph(text);
  std::unique_ptr<JitModel> model = compileModelJit(*renamed, compileTarget());
  ASSERT_EQ(model->descriptor()->num_cache_pairs, 2);
  const int count = 12;
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = count;
  options.num_threads = 1;
  onnxc_generator *generator = onnxc_generator_create(model->descriptor(), &options);
  ASSERT_NE(generator, nullptr) << onnxc_last_error();
  EXPECT_EQ(onnxc_generator_cache_pairs_in_place(generator), 2);
  int64_t prompt[] = {3, 9, 4};
  std::vector<int64_t> tokens(count);
  ASSERT_EQ(onnxc_generate(generator, prompt, 3, tokens.data(), count), count)
      << onnxc_generator_error(generator);
  auto original = parseGraph(kvtest::tinyDecoderText());
  EXPECT_EQ(tokens, kvtest::referenceGreedy(*original, {3, 9, 4}, count));
  onnxc_generator_destroy(generator);
}

TEST(KvCacheInPlace, APastReadByAnythingElseKeepsTwoBuffers) {
  // past_v also feeds a Transpose (say, an unfused attention): its pair is
  // refused with a note; past_k's pair stands.
  GraphText g;
  g.input("kin", "f32[b, 2, s, 8]").input("v", "f32[b, 2, s, 8]");
  g.input("past_k", "f32[b, 2, p, 8]").input("past_v", "f32[b, 2, p, 8]");
  g.node("%vt = Transpose(%past_v) {perm = [0, 1, 3, 2]}");
  g.output("vt", "f32[b, 2, 8, p]");
  g.output("present_k", "f32[b, 2, t, 8]", "Concat(%past_k, %kin) {axis = 2}");
  g.output("present_v", "f32[b, 2, t, 8]", "Concat(%past_v, %v) {axis = 2}");
  auto graph = parseGraph(g.str());
  ModelPlan plan = lowerOnly(*graph);
  ASSERT_EQ(plan.cachePairs.size(), 1u);
  EXPECT_EQ(plan.inputs[plan.cachePairs[0].input].name, "past_k");
  ASSERT_EQ(plan.cacheNotes.size(), 1u);
  EXPECT_NE(plan.cacheNotes[0].find("cache 'past_v' -> 'present_v' keeps two buffers: the past "
                                    "is also read by"),
            std::string::npos)
      << plan.cacheNotes[0];
  // Compiled without pairs for it, both still match the reference.
  expectCompiledMatchesReference(*graph, {{"kin", randomOf(DType::F32, {1, 2, 2, 8}, 1)},
                                          {"v", randomOf(DType::F32, {1, 2, 2, 8}, 2)},
                                          {"past_k", randomOf(DType::F32, {1, 2, 5, 8}, 3)},
                                          {"past_v", randomOf(DType::F32, {1, 2, 5, 8}, 4)}});
}

} // namespace
} // namespace onnxc::lowertest
