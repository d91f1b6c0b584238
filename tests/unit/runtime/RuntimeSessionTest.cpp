//===- tests/unit/runtime/RuntimeSessionTest.cpp - Runs of hand-built descriptors --===//
#include "RuntimeTestModel.h"
#include "runtime/Session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

using namespace onnxc::runtime;
using namespace onnxc::runtime::testing;

namespace {

struct SessionDeleter {
  void operator()(onnxc_session *session) const { onnxc_session_destroy(session); }
};
using SessionPtr = std::unique_ptr<onnxc_session, SessionDeleter>;

SessionPtr createSession(const onnxc_model_descriptor *model, int threads) {
  SessionPtr session(onnxc_session_create(model, threads));
  EXPECT_TRUE(session) << onnxc_last_error();
  return session;
}

/// Checks the outputs a run filled in against the test case's expectation.
void expectOutputs(const TestCase &test, const onnxc_tensor *outputs) {
  const onnxc_tensor &z = outputs[0], &s = outputs[1];
  ASSERT_NE(z.data, nullptr);
  EXPECT_EQ(z.dtype, ONNXC_F32);
  ASSERT_EQ(z.rank, 3);
  EXPECT_EQ(z.dims[0], test.batch);
  EXPECT_EQ(z.dims[1], test.seq);
  EXPECT_EQ(z.dims[2], kChannels);
  EXPECT_EQ(z.size_bytes, test.z.size() * sizeof(float));
  ASSERT_EQ(s.rank, 1);
  EXPECT_EQ(s.dims[0], test.batch);
  EXPECT_EQ(s.size_bytes, test.s.size() * sizeof(float));
  // The kernels do the reference's operations in the same order: bit-exact.
  EXPECT_EQ(std::memcmp(z.data, test.z.data(), z.size_bytes), 0);
  EXPECT_EQ(std::memcmp(s.data, test.s.data(), s.size_bytes), 0);
}

size_t alignedRowsBytes(int64_t batch, int64_t seq) {
  return (size_t(batch * seq * kChannels * 4) + 63) / 64 * 64;
}

} // namespace

TEST(RuntimeSession, TwoShapesWithoutRecreatingTheSession) {
  TestModel model;
  SessionPtr session = createSession(model.descriptor(), 2);
  ASSERT_TRUE(session);
  for (auto [batch, seq] : {std::pair{2, 3}, {1, 7}, {2, 3}, {3, 1}}) {
    TestCase test(batch, seq);
    std::vector<onnxc_tensor> inputs = test.inputs();
    onnxc_tensor outputs[2] = {};
    ASSERT_EQ(onnxc_session_run(session.get(), inputs.data(), 3, outputs, 2), 0)
        << onnxc_session_error(session.get());
    EXPECT_STREQ(onnxc_session_error(session.get()), "");
    expectOutputs(test, outputs);
  }
}

TEST(RuntimeSession, ArenaIsSmallerThanTheIntermediates) {
  TestModel model;
  SessionPtr session = createSession(model.descriptor(), 1);
  for (auto [batch, seq] : {std::pair{2, 3}, {4, 8}}) {
    TestCase test(batch, seq);
    std::vector<onnxc_tensor> inputs = test.inputs();
    onnxc_tensor outputs[2] = {};
    ASSERT_EQ(onnxc_session_run(session.get(), inputs.data(), 3, outputs, 2), 0);
    // a (steps 0-1) and t (steps 2-3) never live together: two slots for three.
    size_t slot = alignedRowsBytes(batch, seq);
    EXPECT_EQ(onnxc_session_arena_bytes(session.get()), 2 * slot);
    EXPECT_LT(onnxc_session_arena_bytes(session.get()), 3 * size_t(batch * seq) * 16);
  }
}

TEST(RuntimeSession, RepeatedShapesReuseThePlanAndTheMemory) {
  TestModel model;
  std::string error;
  std::unique_ptr<Session> session = Session::create(model.descriptor(), 2, error);
  ASSERT_TRUE(session) << error;
  TestCase small(2, 3), large(4, 5);
  std::vector<onnxc_tensor> smallInputs = small.inputs(), largeInputs = large.inputs();
  onnxc_tensor first[2] = {}, second[2] = {};
  ASSERT_TRUE(session->run(smallInputs.data(), 3, first, 2));
  ASSERT_TRUE(session->run(smallInputs.data(), 3, second, 2));
  EXPECT_EQ(session->plansBuilt(), 1u);
  EXPECT_EQ(first[0].data, second[0].data) << "library-owned outputs are reused";
  EXPECT_EQ(first[1].data, second[1].data);
  expectOutputs(small, second);

  ASSERT_TRUE(session->run(largeInputs.data(), 3, second, 2));
  expectOutputs(large, second);
  ASSERT_TRUE(session->run(smallInputs.data(), 3, second, 2));
  expectOutputs(small, second);
  EXPECT_EQ(session->plansBuilt(), 2u);
}

TEST(RuntimeSession, CallerProvidedOutputs) {
  TestModel model;
  SessionPtr session = createSession(model.descriptor(), 2);
  TestCase test(3, 4);
  std::vector<onnxc_tensor> inputs = test.inputs();
  std::vector<float> z(test.z.size()), s(test.s.size() + 5); // s with room to spare
  onnxc_tensor outputs[2] = {};
  outputs[0].data = z.data();
  outputs[0].size_bytes = z.size() * sizeof(float);
  outputs[1].data = s.data();
  outputs[1].size_bytes = s.size() * sizeof(float);
  ASSERT_EQ(onnxc_session_run(session.get(), inputs.data(), 3, outputs, 2), 0)
      << onnxc_session_error(session.get());
  EXPECT_EQ(outputs[0].data, z.data());
  EXPECT_EQ(outputs[1].data, s.data());
  expectOutputs(test, outputs);
}

TEST(RuntimeSession, ReturnedLibraryOutputsGrowWithTheShape) {
  // Callers often pass last run's tensors back; the session's own buffer
  // must not then count as a too-small caller buffer.
  TestModel model;
  SessionPtr session = createSession(model.descriptor(), 2);
  TestCase small(1, 2), large(3, 9);
  std::vector<onnxc_tensor> smallInputs = small.inputs(), largeInputs = large.inputs();
  onnxc_tensor outputs[2] = {};
  ASSERT_EQ(onnxc_session_run(session.get(), smallInputs.data(), 3, outputs, 2), 0);
  ASSERT_EQ(onnxc_session_run(session.get(), largeInputs.data(), 3, outputs, 2), 0)
      << onnxc_session_error(session.get());
  expectOutputs(large, outputs);
}

TEST(RuntimeSession, EmptyBatchRunsNoTasks) {
  TestModel model;
  SessionPtr session = createSession(model.descriptor(), 2);
  TestCase test(0, 5);
  std::vector<onnxc_tensor> inputs = test.inputs();
  onnxc_tensor outputs[2] = {};
  ASSERT_EQ(onnxc_session_run(session.get(), inputs.data(), 3, outputs, 2), 0)
      << onnxc_session_error(session.get());
  EXPECT_EQ(outputs[0].size_bytes, 0u);
  EXPECT_EQ(outputs[0].dims[0], 0);
  EXPECT_EQ(outputs[0].dims[1], 5);
}

namespace {

// A one-input model whose step has `n` tasks, each counting its own visit.
const int64_t kNExpr[] = {1, 1, 1, 0};
const int64_t kNI32Bytes[] = {1, 4, 1, 0};

int64_t nTasks(const int64_t *symbols) { return symbols[0]; }

int32_t zeroCounts(void *const *buffers, const int64_t *symbols, int64_t, int64_t) {
  std::memset(buffers[0], 0, size_t(symbols[0]) * sizeof(int32_t));
  return 0;
}

int32_t countVisits(void *const *buffers, const int64_t *, int64_t begin, int64_t end) {
  auto *counts = static_cast<int32_t *>(buffers[0]);
  for (int64_t i = begin; i < end; ++i)
    std::atomic_ref<int32_t>(counts[i]).fetch_add(1, std::memory_order_relaxed);
  return 0;
}

/// Fails in the task that holds element 5, as a Gather does on a bad index.
int32_t failAtFive(void *const *, const int64_t *, int64_t begin, int64_t end) {
  return begin <= 5 && 5 < end ? 1 : 0;
}

/// x: u8[n] -> counts: i32[n], computed by `first` and then the counting
/// step (n tasks, each adding 1 to its own element).
struct CountingModel {
  static constexpr int32_t StepBuffers[] = {0};

  CountingModel(const char *name, onnxc_step first) {
    steps[0] = first;
    model = {.abi_version = ONNXC_ABI_VERSION,
             .model_name = name,
             .num_symbols = 1,
             .symbol_names = symbolNames,
             .symbol_sources = sources,
             .num_inputs = 1,
             .inputs = inputs,
             .num_outputs = 1,
             .outputs = outputs,
             .num_buffers = 1,
             .buffers = buffers,
             .num_steps = 2,
             .steps = steps,
             .num_assumptions = 0,
             .assumptions = nullptr};
  }
  CountingModel(const CountingModel &) = delete;

  const char *symbolNames[1] = {"n"};
  onnxc_symbol_source sources[1] = {{0, 0}};
  const onnxc_dim_expr dims[1] = {kNExpr};
  onnxc_tensor_info inputs[1] = {{"x", ONNXC_U8, 1, dims, "[n]"}};
  onnxc_tensor_info outputs[1] = {{"counts", ONNXC_I32, 1, dims, "[n]"}};
  onnxc_buffer buffers[1] = {{ONNXC_BUFFER_OUTPUT, 0, kNI32Bytes, nullptr, 0, 0}};
  onnxc_step steps[2] = {{}, {"count", countVisits, nTasks, 1, StepBuffers, nullptr}};
  onnxc_model_descriptor model{};
};

} // namespace

TEST(RuntimeSession, ManyTasksRunExactlyOnce) {
  CountingModel counting("count",
                         {"zero", zeroCounts, nullptr, 1, CountingModel::StepBuffers, nullptr});
  const onnxc_model_descriptor &model = counting.model;
  for (int threads : {1, 2, 4}) {
    SessionPtr session = createSession(&model, threads);
    for (int64_t n : {1, 2, 3, 5, 1000, 4097}) {
      std::vector<uint8_t> x(n);
      onnxc_tensor input = {x.data(), ONNXC_U8, 1, {n}, 0};
      onnxc_tensor output = {};
      ASSERT_EQ(onnxc_session_run(session.get(), &input, 1, &output, 1), 0);
      auto *counts = static_cast<const int32_t *>(output.data);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(counts[i], 1) << "task " << i << " of " << n << ", " << threads << " threads";
    }
  }
}

TEST(RuntimeSession, KernelReportingBadDataFailsTheRunWithTheStepsMessage) {
  CountingModel counting("fails", {"Gather ids", failAtFive, nTasks, 1, CountingModel::StepBuffers,
                                   "an index of 'ids' is out of range"});
  const onnxc_model_descriptor &model = counting.model;
  for (int threads : {1, 2}) {
    SessionPtr session = createSession(&model, threads);
    std::vector<uint8_t> x(4);
    onnxc_tensor input = {x.data(), ONNXC_U8, 1, {4}, 0};
    onnxc_tensor output = {};
    EXPECT_EQ(onnxc_session_run(session.get(), &input, 1, &output, 1), 0) << "no task holds 5";
    x.resize(100);
    input = {x.data(), ONNXC_U8, 1, {100}, 0};
    output = {};
    ASSERT_NE(onnxc_session_run(session.get(), &input, 1, &output, 1), 0);
    EXPECT_STREQ(onnxc_session_error(session.get()),
                 "step 'Gather ids': an index of 'ids' is out of range");
    // The session stays usable.
    x.resize(3);
    input = {x.data(), ONNXC_U8, 1, {3}, 0};
    output = {};
    EXPECT_EQ(onnxc_session_run(session.get(), &input, 1, &output, 1), 0);
  }
}

TEST(RuntimeSession, ConcurrentSessionsGiveIdenticalResults) {
  TestModel model;
  const onnxc_model_descriptor *descriptor = model.descriptor();
  const std::vector<TestCase> cases = {{2, 3}, {3, 5}, {1, 9}, {4, 16}};
  constexpr int kThreads = 4, kRounds = 25;
  std::vector<std::vector<float>> lastZ(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      SessionPtr session(onnxc_session_create(descriptor, 2));
      if (!session) {
        ++failures;
        return;
      }
      for (int round = 0; round < kRounds; ++round) {
        const TestCase &test = cases[(round + t) % cases.size()];
        std::vector<onnxc_tensor> inputs = test.inputs();
        onnxc_tensor outputs[2] = {};
        if (onnxc_session_run(session.get(), inputs.data(), 3, outputs, 2) != 0 ||
            std::memcmp(outputs[0].data, test.z.data(), outputs[0].size_bytes) != 0 ||
            std::memcmp(outputs[1].data, test.s.data(), outputs[1].size_bytes) != 0)
          ++failures;
        auto *z = static_cast<const float *>(outputs[0].data);
        lastZ[t].assign(z, z + outputs[0].size_bytes / sizeof(float));
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
  // Every thread's last round ran case (kRounds - 1 + t) % 4; compare equal ones.
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(lastZ[t], cases[(kRounds - 1 + t) % cases.size()].z) << "thread " << t;
}

TEST(RuntimeSession, RunOverTheMemoryLimitFailsBeforeAllocating) {
  TestModel model;
  SessionPtr session = createSession(model.descriptor(), 1);
  TestCase small(2, 3), large(64, 64);
  onnxc_tensor outputs[2] = {};
  std::vector<onnxc_tensor> inputs = small.inputs();
  ASSERT_EQ(onnxc_session_run(session.get(), inputs.data(), 3, outputs, 2), 0);
  size_t smallNeed =
      onnxc_session_arena_bytes(session.get()) + outputs[0].size_bytes + outputs[1].size_bytes;
  onnxc_session_set_memory_limit(session.get(), smallNeed);
  onnxc_tensor again[2] = {};
  ASSERT_EQ(onnxc_session_run(session.get(), inputs.data(), 3, again, 2), 0)
      << onnxc_session_error(session.get());
  // 64x64 rows need far more than the small run: refused, with the figures.
  inputs = large.inputs();
  onnxc_tensor refused[2] = {};
  ASSERT_NE(onnxc_session_run(session.get(), inputs.data(), 3, refused, 2), 0);
  std::string error = onnxc_session_error(session.get());
  EXPECT_NE(error.find("more than the memory limit of " + std::to_string(smallNeed)),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("batch = 64, seq = 64"), std::string::npos) << error;
  EXPECT_EQ(refused[0].data, nullptr); // nothing handed out
  // 0 restores the default: the run goes through.
  onnxc_session_set_memory_limit(session.get(), 0);
  ASSERT_EQ(onnxc_session_run(session.get(), inputs.data(), 3, refused, 2), 0)
      << onnxc_session_error(session.get());
  expectOutputs(large, refused);
}
