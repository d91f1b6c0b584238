//===- runtime/ExecutionPlan.cpp - Everything a run derives from the symbols ===//
#include "ExecutionPlan.h"

#include "ArenaPlanner.h"
#include "DimExpr.h"

namespace onnxc::runtime {

namespace {

std::string describeBinding(const onnxc_model_descriptor &model, const int64_t *symbols) {
  std::string text;
  for (int32_t s = 0; s < model.num_symbols; ++s)
    text += std::string(s ? ", " : "") + model.symbol_names[s] + " = " + std::to_string(symbols[s]);
  return text.empty() ? "no symbols" : text;
}

std::string describeBuffer(const onnxc_model_descriptor &model, int32_t index) {
  const onnxc_buffer &buffer = model.buffers[index];
  if (buffer.kind == ONNXC_BUFFER_INPUT)
    return "input '" + std::string(model.inputs[buffer.index].name) + "'";
  if (buffer.kind == ONNXC_BUFFER_OUTPUT)
    return "output '" + std::string(model.outputs[buffer.index].name) + "'";
  for (int32_t s = 0; s < model.num_steps; ++s)
    for (int32_t i = 0; i < model.steps[s].num_buffers; ++i)
      if (model.steps[s].buffers[i] == index)
        return "buffer " + std::to_string(index) + " of step '" +
               (model.steps[s].name ? model.steps[s].name : "?") + "'";
  return "buffer " + std::to_string(index);
}

std::string sizeBuffers(const onnxc_model_descriptor &model, const int64_t *symbols,
                        ExecutionPlan &plan) {
  plan.bufferBytes.assign(model.num_buffers, 0);
  for (int32_t b = 0; b < model.num_buffers; ++b) {
    std::optional<int64_t> bytes =
        evaluateDimExpr(model.buffers[b].size_bytes, symbols, model.num_symbols);
    if (!bytes || *bytes < 0)
      return "the size of " + describeBuffer(model, b) + " " +
             (bytes ? "is negative" : "overflows") + " for " + describeBinding(model, symbols);
    plan.bufferBytes[b] = static_cast<size_t>(*bytes);
  }
  return "";
}

std::string placeIntermediates(const onnxc_model_descriptor &model, const int64_t *symbols,
                               ExecutionPlan &plan) {
  std::vector<ArenaRequest> requests;
  std::vector<int32_t> requestBuffers;
  plan.intermediateBytes = 0;
  for (int32_t b = 0; b < model.num_buffers; ++b) {
    const onnxc_buffer &buffer = model.buffers[b];
    if (buffer.kind != ONNXC_BUFFER_INTERMEDIATE)
      continue;
    requests.push_back({plan.bufferBytes[b], buffer.first_step, buffer.last_step});
    requestBuffers.push_back(b);
    plan.intermediateBytes += plan.bufferBytes[b];
  }
  std::optional<ArenaPlan> arena = planArena(requests);
  if (!arena)
    return "the arena overflows the address space for " + describeBinding(model, symbols);
  plan.arenaOffsets.assign(model.num_buffers, 0);
  for (size_t r = 0; r < requests.size(); ++r)
    plan.arenaOffsets[requestBuffers[r]] = arena->offsets[r];
  plan.arenaBytes = arena->totalBytes;
  return "";
}

std::string shapeOutputs(const onnxc_model_descriptor &model, const int64_t *symbols,
                         ExecutionPlan &plan) {
  plan.outputDims.assign(size_t(model.num_outputs) * ONNXC_MAX_RANK, 0);
  for (int32_t o = 0; o < model.num_outputs; ++o) {
    const onnxc_tensor_info &info = model.outputs[o];
    for (int32_t axis = 0; axis < info.rank; ++axis) {
      std::optional<int64_t> dim = evaluateDimExpr(info.dims[axis], symbols, model.num_symbols);
      if (!dim || *dim < 0)
        return "output '" + std::string(info.name) + "': dim " + std::to_string(axis) + " " +
               (dim ? "is " + std::to_string(*dim) : std::string("overflows")) + " for " +
               describeBinding(model, symbols);
      plan.outputDims[size_t(o) * ONNXC_MAX_RANK + axis] = *dim;
    }
  }
  plan.outputBytes.assign(model.num_outputs, 0);
  for (int32_t b = 0; b < model.num_buffers; ++b)
    if (model.buffers[b].kind == ONNXC_BUFFER_OUTPUT)
      plan.outputBytes[model.buffers[b].index] = plan.bufferBytes[b];
  return "";
}

std::string countTasks(const onnxc_model_descriptor &model, const int64_t *symbols,
                       ExecutionPlan &plan) {
  plan.taskCounts.assign(model.num_steps, 1);
  for (int32_t s = 0; s < model.num_steps; ++s) {
    const onnxc_step &step = model.steps[s];
    if (!step.task_count)
      continue;
    int64_t tasks = step.task_count(symbols);
    if (tasks < 0)
      return "step '" + std::string(step.name ? step.name : "?") + "' reports " +
             std::to_string(tasks) + " tasks for " + describeBinding(model, symbols);
    plan.taskCounts[s] = tasks;
  }
  return "";
}

} // namespace

std::string buildExecutionPlan(const onnxc_model_descriptor &model, const int64_t *symbols,
                               ExecutionPlan &plan) {
  plan.symbols.assign(symbols, symbols + model.num_symbols);
  for (auto stage : {sizeBuffers, placeIntermediates, shapeOutputs, countTasks})
    if (std::string error = stage(model, symbols, plan); !error.empty())
      return error;
  return "";
}

} // namespace onnxc::runtime
