//===- tests/unit/runtime/RuntimeAllocationTest.cpp - Steady-state runs allocate nothing ===//
//
// Replaces the global operator new of the unit-test binary with one that
// forwards to malloc and, only on a thread that asked for it, counts calls.
// Other tests see no difference beyond one thread-local check per allocation.
//
//===----------------------------------------------------------------------===//
#include "GeneratorTestModel.h"
#include "KvCacheTestModel.h"
#include "LoweringTestSupport.h"
#include "RuntimeTestModel.h"
#include "codegen/ModelCompiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace {

thread_local bool countingAllocations = false;
thread_local int64_t allocationCount = 0;

void *allocate(std::size_t size, std::size_t alignment) {
  if (countingAllocations)
    ++allocationCount;
  if (size == 0)
    size = 1;
  void *pointer = nullptr;
  if (alignment <= alignof(std::max_align_t))
    pointer = std::malloc(size);
  else if (posix_memalign(&pointer, alignment, size) != 0)
    pointer = nullptr;
  if (!pointer)
    throw std::bad_alloc();
  return pointer;
}

// Out of line so GCC does not see free() meet operator new's pointer after
// inlining and warn about a mismatch that this replacement makes correct.
[[gnu::noinline]] void release(void *pointer) noexcept { std::free(pointer); }

} // namespace

// Every form is replaced, not only the two the others default to: a
// sanitizer runtime supplies its own for each form left alone, and would
// then see its allocation freed by ours.
void *operator new(std::size_t size) { return allocate(size, 0); }
void *operator new[](std::size_t size) { return allocate(size, 0); }
void *operator new(std::size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void *operator new[](std::size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
  try {
    return allocate(size, 0);
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}
void *operator new[](std::size_t size, const std::nothrow_t &tag) noexcept {
  return operator new(size, tag);
}
void *operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t &) noexcept {
  try {
    return allocate(size, static_cast<std::size_t>(alignment));
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}
void *operator new[](std::size_t size, std::align_val_t alignment,
                     const std::nothrow_t &tag) noexcept {
  return operator new(size, alignment, tag);
}
void operator delete(void *pointer) noexcept { release(pointer); }
void operator delete[](void *pointer) noexcept { release(pointer); }
void operator delete(void *pointer, std::size_t) noexcept { release(pointer); }
void operator delete[](void *pointer, std::size_t) noexcept { release(pointer); }
void operator delete(void *pointer, std::align_val_t) noexcept { release(pointer); }
void operator delete[](void *pointer, std::align_val_t) noexcept { release(pointer); }
void operator delete(void *pointer, std::size_t, std::align_val_t) noexcept { release(pointer); }
void operator delete[](void *pointer, std::size_t, std::align_val_t) noexcept { release(pointer); }
void operator delete(void *pointer, const std::nothrow_t &) noexcept { release(pointer); }
void operator delete[](void *pointer, const std::nothrow_t &) noexcept { release(pointer); }
void operator delete(void *pointer, std::align_val_t, const std::nothrow_t &) noexcept {
  release(pointer);
}
void operator delete[](void *pointer, std::align_val_t, const std::nothrow_t &) noexcept {
  release(pointer);
}

using namespace onnxc::runtime::testing;

TEST(RuntimeAllocation, RepeatedShapesRunWithoutAllocating) {
  TestModel model;
  onnxc_session *session = onnxc_session_create(model.descriptor(), 2);
  ASSERT_NE(session, nullptr) << onnxc_last_error();
  TestCase small(2, 3), large(3, 8);
  std::vector<onnxc_tensor> smallInputs = small.inputs(), largeInputs = large.inputs();
  onnxc_tensor outputs[2] = {};
  // Warm up both shapes: plans and buffers are made here.
  ASSERT_EQ(onnxc_session_run(session, largeInputs.data(), 3, outputs, 2), 0);
  ASSERT_EQ(onnxc_session_run(session, smallInputs.data(), 3, outputs, 2), 0);

  countingAllocations = true;
  allocationCount = 0;
  int failures = 0;
  for (int round = 0; round < 10; ++round) {
    std::vector<onnxc_tensor> &inputs = round % 2 ? smallInputs : largeInputs;
    failures += onnxc_session_run(session, inputs.data(), 3, outputs, 2) != 0;
  }
  countingAllocations = false;
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(allocationCount, 0);
  onnxc_session_destroy(session);
}

TEST(RuntimeAllocation, GeneratorStepsAllocateNothing) {
  // The cache model at a preset capacity: after the first steps (the
  // session's plan cache filling up), steps at ever longer contexts
  // allocate nothing at all, let alone memory that grows with the context.
  toy::ToyDecoder decoder(true);
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = 200;
  options.capacity = 210;
  options.num_threads = 2;
  onnxc_generator *generator = onnxc_generator_create(decoder.descriptor(), &options);
  ASSERT_NE(generator, nullptr) << onnxc_last_error();
  int64_t prompt[] = {3, 9, 4}, token = 0;
  ASSERT_EQ(onnxc_generator_prefill(generator, prompt, 3), 0) << onnxc_generator_error(generator);
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(onnxc_generator_next(generator, &token), 1) << onnxc_generator_error(generator);

  countingAllocations = true;
  allocationCount = 0;
  int produced = 0;
  while (onnxc_generator_next(generator, &token) == 1)
    ++produced;
  countingAllocations = false;
  EXPECT_EQ(produced, 180) << onnxc_generator_error(generator);
  EXPECT_EQ(allocationCount, 0);
  onnxc_generator_destroy(generator);
}

TEST(RuntimeAllocation, InPlaceCacheStepsAllocateNothingThatGrows) {
  // A compiled decoder whose caches are pairs updated in place: one buffer
  // per pair bound as both past and present. Each step at a new length
  // builds its execution plan (a few vectors the size of the model's buffer
  // table; docs/GENERATE.md, Partial), so steps allocate the same small
  // amount at every context: nothing that grows with it.
  auto graph = onnxc::lowertest::parseGraph(onnxc::kvtest::tinyDecoderText());
  std::unique_ptr<onnxc::JitModel> model =
      onnxc::compileModelJit(*graph, onnxc::lowertest::compileTarget());
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = 200;
  options.capacity = 210;
  options.num_threads = 2;
  onnxc_generator *generator = onnxc_generator_create(model->descriptor(), &options);
  ASSERT_NE(generator, nullptr) << onnxc_last_error();
  EXPECT_EQ(onnxc_generator_cache_pairs_in_place(generator), 2);
  int64_t prompt[] = {3, 9, 4}, token = 0;
  ASSERT_EQ(onnxc_generator_prefill(generator, prompt, 3), 0) << onnxc_generator_error(generator);
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(onnxc_generator_next(generator, &token), 1) << onnxc_generator_error(generator);

  std::vector<int64_t> perStep;
  perStep.reserve(200);
  while (true) {
    countingAllocations = true;
    allocationCount = 0;
    int status = onnxc_generator_next(generator, &token);
    countingAllocations = false;
    if (status != 1)
      break;
    perStep.push_back(allocationCount);
  }
  ASSERT_EQ(perStep.size(), 180u) << onnxc_generator_error(generator);
  EXPECT_EQ(*std::min_element(perStep.begin(), perStep.end()),
            *std::max_element(perStep.begin(), perStep.end()));
  onnxc_generator_destroy(generator);
}
