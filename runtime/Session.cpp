//===- runtime/Session.cpp - One model's runs on one thread pool -----------===//
#include "Session.h"

#include "CpuFeatures.h"
#include "DescriptorCheck.h"
#include "InputBinding.h"
#include "MemoryLimit.h"

#include <algorithm>
#include <atomic>
#include <chrono>

namespace onnxc::runtime {

namespace {

/// Distinct shapes a session keeps plans for. A server typically sees a few
/// padded lengths; beyond that, replanning costs microseconds anyway.
constexpr size_t kPlanCacheSize = 8;

} // namespace

std::unique_ptr<Session> Session::create(const onnxc_model_descriptor *model, int numThreads,
                                         std::string &error) {
  error = checkDescriptor(model);
  if (!error.empty())
    return nullptr;
  error = checkModelCpuFeatures(*model);
  if (!error.empty())
    return nullptr;
  if (numThreads < 0) {
    error = "num_threads is " + std::to_string(numThreads) + "; use 0 for one per core";
    return nullptr;
  }
  if (!memoryLimitError().empty()) {
    error = memoryLimitError();
    return nullptr;
  }
  return std::unique_ptr<Session>(new Session(*model, numThreads));
}

Session::Session(const onnxc_model_descriptor &model, int numThreads)
    : model_(model), pool_(numThreads), symbols_(model.num_symbols),
      ownedOutputs_(model.num_outputs), bufferPointers_(model.num_buffers),
      memoryLimit_(defaultMemoryLimit()) {
  // The per-step pointer lists are laid out once; a run only refills them.
  stepBufferStart_.reserve(model.num_steps);
  size_t total = 0;
  for (int32_t s = 0; s < model.num_steps; ++s) {
    stepBufferStart_.push_back(total);
    total += model.steps[s].num_buffers;
  }
  stepBufferPointers_.assign(total, nullptr);
  plans_.reserve(kPlanCacheSize);
}

bool Session::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

const ExecutionPlan *Session::findOrBuildPlan() {
  for (const std::unique_ptr<ExecutionPlan> &plan : plans_)
    if (std::equal(symbols_.begin(), symbols_.end(), plan->symbols.begin()))
      return plan.get();

  // Build aside: a half-built plan left in the cache would match later runs.
  if (!sparePlan_)
    sparePlan_ = std::make_unique<ExecutionPlan>();
  if (std::string error = buildExecutionPlan(model_, symbols_.data(), *sparePlan_);
      !error.empty()) {
    fail(std::move(error));
    return nullptr;
  }
  ++plansBuilt_;
  if (plans_.size() < kPlanCacheSize) {
    plans_.push_back(std::move(sparePlan_));
    return plans_.back().get();
  }
  // A generator's every step has a new cache length: recycling the evicted
  // plan keeps such steps from allocating plans over and over.
  size_t slot = nextEvicted_;
  nextEvicted_ = (nextEvicted_ + 1) % kPlanCacheSize;
  std::swap(plans_[slot], sparePlan_);
  return plans_[slot].get();
}

void Session::setMemoryLimit(int64_t bytes) {
  memoryLimit_ = bytes > 0 ? bytes : defaultMemoryLimit();
}

bool Session::setCacheCapacity(int64_t capacity) {
  error_.clear();
  if (capacity < 0)
    return fail("cache capacity is " + std::to_string(capacity) +
                "; use 0 for each present's length or a positive number of positions");
  cacheCapacity_ = capacity;
  return true;
}

bool Session::checkSharedCaches(const onnxc_tensor *inputs, const onnxc_tensor *outputs) {
  // One buffer as both past and present is only sound when both are laid
  // out for the same capacity; otherwise the Concat would read the past
  // rows while it moves them.
  for (int32_t p = 0; p < model_.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model_.cache_pairs[p];
    if (!inputs[pair.input].data || inputs[pair.input].data != outputs[pair.output].data ||
        symbols_[size_t(pair.capacity_symbol)] == symbols_[size_t(pair.past_capacity_symbol)])
      continue;
    return fail("input '" + std::string(model_.inputs[pair.input].name) + "' and output '" +
                model_.outputs[pair.output].name +
                "' share a buffer, which needs a cache capacity "
                "(onnxc_session_set_cache_capacity) to update the cache in place");
  }
  return true;
}

bool Session::checkMemory(const ExecutionPlan &plan, const onnxc_tensor *outputs) {
  // Sizes are each below 2^63 (checked when planned); sum them as unsigned
  // 128-bit so that no combination wraps.
  unsigned __int128 total = plan.arenaBytes, outputBytes = 0;
  for (int32_t o = 0; o < model_.num_outputs; ++o)
    if (!outputs[o].data || outputs[o].data == ownedOutputs_[o].data())
      outputBytes += plan.outputBytes[o];
  total += outputBytes;
  if (total <= static_cast<unsigned __int128>(memoryLimit_))
    return true;
  auto text = [](unsigned __int128 v) {
    return v > UINT64_MAX ? std::string("more than 2^64") : std::to_string(uint64_t(v));
  };
  std::string binding;
  for (int32_t s = 0; s < model_.num_symbols; ++s)
    binding += std::string(s ? ", " : " for ") + model_.symbol_names[s] + " = " +
               std::to_string(symbols_[size_t(s)]);
  return fail("the run needs " + text(total) + " bytes (arena " + text(plan.arenaBytes) +
              ", outputs " + text(outputBytes) + ")" + binding +
              ", more than the memory limit of " + std::to_string(memoryLimit_) +
              " bytes (ONNXC_MEMORY_LIMIT, onnxc_session_set_memory_limit)");
}

bool Session::prepareOutputs(const ExecutionPlan &plan, onnxc_tensor *outputs) {
  // A caller that passes back last run's tensors hands us our own buffer;
  // treating it as library-owned lets it grow with the shapes.
  auto isLibraryOwned = [&](int32_t o) {
    return !outputs[o].data || outputs[o].data == ownedOutputs_[o].data();
  };
  // Check every caller buffer before touching any output, so a failed run
  // leaves the caller's tensors as they were.
  for (int32_t o = 0; o < model_.num_outputs; ++o)
    if (!isLibraryOwned(o) && outputs[o].size_bytes < plan.outputBytes[o])
      return fail("output '" + std::string(model_.outputs[o].name) + "': the buffer holds " +
                  std::to_string(outputs[o].size_bytes) + " bytes but the model needs " +
                  std::to_string(plan.outputBytes[o]));
  for (int32_t o = 0; o < model_.num_outputs; ++o) {
    onnxc_tensor &output = outputs[o];
    const onnxc_tensor_info &info = model_.outputs[o];
    if (isLibraryOwned(o)) {
      ownedOutputs_[o].reserve(plan.outputBytes[o]);
      output.data = ownedOutputs_[o].data();
    }
    output.dtype = info.dtype;
    output.rank = info.rank;
    const int64_t *dims = &plan.outputDims[size_t(o) * ONNXC_MAX_RANK];
    std::copy(dims, dims + ONNXC_MAX_RANK, output.dims);
    output.size_bytes = plan.outputBytes[o];
  }
  return true;
}

void Session::resolveBuffers(const ExecutionPlan &plan, const onnxc_tensor *inputs,
                             const onnxc_tensor *outputs) {
  for (int32_t b = 0; b < model_.num_buffers; ++b) {
    const onnxc_buffer &buffer = model_.buffers[b];
    void *pointer = nullptr;
    switch (buffer.kind) {
    case ONNXC_BUFFER_INPUT:
      // Kernels only read inputs; the ABI has one pointer type for all.
      pointer = inputs[buffer.index].data;
      break;
    case ONNXC_BUFFER_OUTPUT:
      pointer = outputs[buffer.index].data;
      break;
    case ONNXC_BUFFER_INTERMEDIATE:
      pointer = arena_.data() + plan.arenaOffsets[b];
      break;
    case ONNXC_BUFFER_CONSTANT:
      pointer = const_cast<void *>(buffer.constant_data);
      break;
    }
    bufferPointers_[b] = pointer;
  }
  for (int32_t s = 0; s < model_.num_steps; ++s) {
    const onnxc_step &step = model_.steps[s];
    void **list = stepBufferPointers_.data() + stepBufferStart_[s];
    for (int32_t i = 0; i < step.num_buffers; ++i)
      list[i] = bufferPointers_[step.buffers[i]];
  }
}

bool Session::runSteps(const ExecutionPlan &plan) {
  const int64_t *symbols = plan.symbols.data();
  // `s` only moves forward, except where a loop's back-edge (a branch step)
  // sends it back to the loop body's first step.
  for (int32_t s = 0; s < model_.num_steps;) {
    const onnxc_step &step = model_.steps[s];
    void *const *buffers = stepBufferPointers_.data() + stepBufferStart_[s];
    auto start =
        profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    int32_t status = 0;
    int32_t next = s + 1;
    if (step.kind == ONNXC_STEP_BRANCH) {
      // One task on this thread: a loop's header is a few scalar loads.
      status = step.kernel(buffers, symbols, 0, 1);
      if (status == ONNXC_BRANCH_TAKEN) {
        status = 0;
        next = step.branch_target;
      }
    } else if (int64_t tasks = plan.taskCounts[s]; tasks > 0) {
      std::atomic<int32_t> result{0};
      onnxc_kernel_fn kernel = step.kernel;
      pool_.parallelFor(tasks, [kernel, buffers, symbols, &result](int64_t begin, int64_t end) {
        if (int32_t r = kernel(buffers, symbols, begin, end))
          result.store(r, std::memory_order_relaxed);
      });
      status = result.load(std::memory_order_relaxed);
    }
    if (profiling_)
      stepNanoseconds_[s] += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
    if (status != 0)
      return fail(std::string("step '") + (step.name ? step.name : "?") +
                  "': " + (step.failure ? step.failure : "the kernel reported invalid input data"));
    s = next;
  }
  return true;
}

void Session::setProfiling(bool enabled) {
  profiling_ = enabled;
  if (enabled)
    stepNanoseconds_.assign(size_t(model_.num_steps), 0);
}

int64_t Session::stepNanoseconds(int32_t step) const {
  if (step < 0 || size_t(step) >= stepNanoseconds_.size())
    return 0;
  return stepNanoseconds_[size_t(step)];
}

bool Session::reserve(const onnxc_tensor *inputs, int32_t numInputs, const onnxc_tensor *outputs,
                      int32_t numOutputs) {
  error_.clear();
  if (std::string error = bindInputs(model_, inputs, numInputs, symbols_.data(), cacheCapacity_);
      !error.empty())
    return fail(std::move(error));
  if (numOutputs != model_.num_outputs || (numOutputs > 0 && !outputs))
    return fail("the model has " + std::to_string(model_.num_outputs) + " outputs but " +
                std::to_string(numOutputs) + " were given");
  try {
    const ExecutionPlan *plan = findOrBuildPlan();
    if (!plan || !checkMemory(*plan, outputs))
      return false;
    arena_.reserve(plan->arenaBytes);
    for (int32_t o = 0; o < model_.num_outputs; ++o)
      if (!outputs[o].data)
        ownedOutputs_[o].reserve(plan->outputBytes[o]);
    return true;
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  }
}

bool Session::run(const onnxc_tensor *inputs, int32_t numInputs, onnxc_tensor *outputs,
                  int32_t numOutputs) {
  error_.clear();
  if (std::string error = bindInputs(model_, inputs, numInputs, symbols_.data(), cacheCapacity_);
      !error.empty())
    return fail(std::move(error));
  if (numOutputs != model_.num_outputs)
    return fail("the model has " + std::to_string(model_.num_outputs) + " outputs but " +
                std::to_string(numOutputs) + " were given");
  if (numOutputs > 0 && !outputs)
    return fail("the output array is NULL");
  try {
    const ExecutionPlan *plan = findOrBuildPlan();
    if (!plan)
      return false;
    if (!checkMemory(*plan, outputs))
      return false;
    arena_.reserve(plan->arenaBytes);
    if (!prepareOutputs(*plan, outputs) || !checkSharedCaches(inputs, outputs))
      return false;
    resolveBuffers(*plan, inputs, outputs);
    if (!runSteps(*plan))
      return false;
    lastArenaBytes_ = plan->arenaBytes;
    return true;
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  }
}

} // namespace onnxc::runtime
