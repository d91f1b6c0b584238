//===- runtime/DescriptorCheck.cpp - Sanity checks of a model descriptor ---===//
#include "DescriptorCheck.h"

#include "DimExprQueries.h"
#include "Dtype.h"
#include "onnxc/onnxc.h"

#include <vector>

namespace onnxc::runtime {

namespace {

std::string quoted(const char *name) { return "'" + std::string(name ? name : "?") + "'"; }

std::string checkTensorInfos(const onnxc_model_descriptor &model, const char *role, int32_t count,
                             const onnxc_tensor_info *infos) {
  if (count < 0 || (count > 0 && !infos))
    return std::string("the ") + role + " table is missing or has a negative count";
  for (int32_t i = 0; i < count; ++i) {
    const onnxc_tensor_info &info = infos[i];
    std::string what = std::string(role) + " " + std::to_string(i);
    if (!info.name)
      return what + " has no name";
    what = std::string(role) + " " + quoted(info.name);
    if (dtypeSize(info.dtype) == 0)
      return what + " has unknown dtype " + std::to_string(info.dtype);
    if (info.rank < 0 || info.rank > ONNXC_MAX_RANK)
      return what + " has rank " + std::to_string(info.rank) + "; the runtime supports 0.." +
             std::to_string(ONNXC_MAX_RANK);
    if (info.rank > 0 && !info.dims)
      return what + " has no dims";
    for (int32_t axis = 0; axis < info.rank; ++axis)
      if (!isWellFormedDimExpr(info.dims[axis], model.num_symbols))
        return what + " dim " + std::to_string(axis) + " is a malformed expression";
  }
  return "";
}

bool hasCachePairTable(const onnxc_model_descriptor &model) {
  return model.num_cache_pairs > 0 && model.cache_pairs;
}

bool isCapacitySymbol(const onnxc_model_descriptor &model, int32_t symbol) {
  if (!hasCachePairTable(model))
    return false;
  for (int32_t p = 0; p < model.num_cache_pairs; ++p)
    if (model.cache_pairs[p].capacity_symbol == symbol ||
        model.cache_pairs[p].past_capacity_symbol == symbol)
      return true;
  return false;
}

/// Runs after the tensor and symbol tables are known to be sound.
std::string checkCachePairs(const onnxc_model_descriptor &model) {
  if (model.num_cache_pairs < 0 || (model.num_cache_pairs > 0 && !model.cache_pairs))
    return "the cache pair table is missing or has a negative count";
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model.cache_pairs[p];
    std::string what = "cache pair " + std::to_string(p);
    if (pair.input < 0 || pair.input >= model.num_inputs)
      return what + " names input " + std::to_string(pair.input) + ", but the model has " +
             std::to_string(model.num_inputs) + " inputs";
    if (pair.output < 0 || pair.output >= model.num_outputs)
      return what + " names output " + std::to_string(pair.output) + ", but the model has " +
             std::to_string(model.num_outputs) + " outputs";
    const onnxc_tensor_info &past = model.inputs[pair.input], &present = model.outputs[pair.output];
    what += " (" + quoted(past.name) + " -> " + quoted(present.name) + ")";
    if (past.rank != present.rank || past.dtype != present.dtype)
      return what + " joins tensors of different ranks or dtypes";
    if (pair.axis < 0 || pair.axis >= past.rank)
      return what + " has axis " + std::to_string(pair.axis) + " for rank " +
             std::to_string(past.rank);
    // A fixed-length cache (TensorScatter's) may have a constant length.
    if (!singleSymbolOf(past.dims[pair.axis]) && !isConstantDimExpr(past.dims[pair.axis]))
      return what + ": the past's dim " + std::to_string(pair.axis) +
             " is neither a symbol nor a constant";
    for (int32_t symbol : {pair.capacity_symbol, pair.past_capacity_symbol}) {
      if (symbol < 0 || symbol >= model.num_symbols)
        return what + " has capacity symbol " + std::to_string(symbol) + ", but the model has " +
               std::to_string(model.num_symbols) + " symbols";
      onnxc_symbol_source source = model.symbol_sources[symbol];
      if (source.input != -1 || source.axis != -1)
        return what + ": its capacity symbol " + quoted(model.symbol_names[symbol]) +
               " is read from an input; a capacity is bound by the runtime";
    }
    for (int32_t q = 0; q < p; ++q)
      if (model.cache_pairs[q].input == pair.input || model.cache_pairs[q].output == pair.output)
        return what + " shares its input or output with cache pair " + std::to_string(q);
  }
  return "";
}

std::string checkSymbols(const onnxc_model_descriptor &model) {
  if (model.num_symbols < 0 ||
      (model.num_symbols > 0 && (!model.symbol_names || !model.symbol_sources)))
    return "the symbol table is missing or has a negative count";
  for (int32_t s = 0; s < model.num_symbols; ++s) {
    const char *name = model.symbol_names[s];
    if (!name)
      return "symbol " + std::to_string(s) + " has no name";
    onnxc_symbol_source source = model.symbol_sources[s];
    std::string what = "symbol " + quoted(name);
    if (source.input == -1 && source.axis == -1 && isCapacitySymbol(model, s))
      continue; // the runtime binds a cache capacity itself
    if (source.input < 0 || source.input >= model.num_inputs)
      return what + " is read from input " + std::to_string(source.input) + ", but the model has " +
             std::to_string(model.num_inputs) + " inputs";
    const onnxc_tensor_info &input = model.inputs[source.input];
    if (source.axis < 0 || source.axis >= input.rank)
      return what + " is read from axis " + std::to_string(source.axis) + " of input " +
             quoted(input.name) + ", which has rank " + std::to_string(input.rank);
    if (singleSymbolOf(input.dims[source.axis]) != s)
      return what + " is read from input " + quoted(input.name) + " dim " +
             std::to_string(source.axis) + ", which is " +
             formatDimExpr(input.dims[source.axis], model.symbol_names) + ", not the symbol itself";
  }
  return "";
}

std::string checkBuffer(const onnxc_model_descriptor &model, int32_t index) {
  const onnxc_buffer &buffer = model.buffers[index];
  std::string what = "buffer " + std::to_string(index);
  if (!isWellFormedDimExpr(buffer.size_bytes, model.num_symbols))
    return what + " has a malformed size expression";
  switch (buffer.kind) {
  case ONNXC_BUFFER_INPUT:
    if (buffer.index < 0 || buffer.index >= model.num_inputs)
      return what + " is input " + std::to_string(buffer.index) + ", which does not exist";
    return "";
  case ONNXC_BUFFER_OUTPUT:
    if (buffer.index < 0 || buffer.index >= model.num_outputs)
      return what + " is output " + std::to_string(buffer.index) + ", which does not exist";
    return "";
  case ONNXC_BUFFER_INTERMEDIATE:
    if (buffer.first_step < 0 || buffer.first_step > buffer.last_step ||
        buffer.last_step >= model.num_steps)
      return what + " has lifetime [" + std::to_string(buffer.first_step) + ", " +
             std::to_string(buffer.last_step) + "], outside the model's " +
             std::to_string(model.num_steps) + " steps";
    return "";
  case ONNXC_BUFFER_CONSTANT:
    if (!buffer.constant_data)
      return what + " is a constant without data";
    return "";
  default:
    return what + " has unknown kind " + std::to_string(buffer.kind);
  }
}

/// Each output must be written by exactly one buffer; an input may be unused.
std::string checkBufferCoverage(const onnxc_model_descriptor &model) {
  std::vector<int> inputUses(model.num_inputs), outputUses(model.num_outputs);
  for (int32_t b = 0; b < model.num_buffers; ++b) {
    const onnxc_buffer &buffer = model.buffers[b];
    if (buffer.kind == ONNXC_BUFFER_INPUT && ++inputUses[buffer.index] > 1)
      return "input " + quoted(model.inputs[buffer.index].name) + " has more than one buffer";
    if (buffer.kind == ONNXC_BUFFER_OUTPUT)
      ++outputUses[buffer.index];
  }
  for (int32_t o = 0; o < model.num_outputs; ++o)
    if (outputUses[o] != 1)
      return "output " + quoted(model.outputs[o].name) + " has " + std::to_string(outputUses[o]) +
             " buffers; it needs exactly one";
  return "";
}

std::string checkSteps(const onnxc_model_descriptor &model) {
  if (model.num_steps < 0 || (model.num_steps > 0 && !model.steps))
    return "the step table is missing or has a negative count";
  for (int32_t s = 0; s < model.num_steps; ++s) {
    const onnxc_step &step = model.steps[s];
    std::string what = "step " + std::to_string(s) + " (" + quoted(step.name) + ")";
    if (!step.kernel)
      return what + " has no kernel";
    if (step.num_buffers < 0 || (step.num_buffers > 0 && !step.buffers))
      return what + " has a missing or negative buffer list";
    if (step.kind != ONNXC_STEP_KERNEL && step.kind != ONNXC_STEP_BRANCH)
      return what + " has an invalid kind " + std::to_string(step.kind);
    if (step.kind == ONNXC_STEP_BRANCH && step.task_count)
      return what + " is a branch with a task count; a branch runs as one task";
    if (step.kind == ONNXC_STEP_BRANCH &&
        (step.branch_target < 0 || step.branch_target > model.num_steps))
      return what + " branches to step " + std::to_string(step.branch_target) +
             ", but the model has " + std::to_string(model.num_steps) + " steps";
    for (int32_t i = 0; i < step.num_buffers; ++i) {
      int32_t b = step.buffers[i];
      if (b < 0 || b >= model.num_buffers)
        return what + " uses buffer " + std::to_string(b) + ", but the model has " +
               std::to_string(model.num_buffers);
      const onnxc_buffer &buffer = model.buffers[b];
      // The arena reuses an intermediate's bytes outside its lifetime.
      if (buffer.kind == ONNXC_BUFFER_INTERMEDIATE &&
          (s < buffer.first_step || s > buffer.last_step))
        return what + " uses buffer " + std::to_string(b) + " outside its lifetime [" +
               std::to_string(buffer.first_step) + ", " + std::to_string(buffer.last_step) + "]";
    }
  }
  return "";
}

std::string checkAssumptions(const onnxc_model_descriptor &model) {
  if (model.num_assumptions < 0 || (model.num_assumptions > 0 && !model.assumptions))
    return "the assumption table is missing or has a negative count";
  for (int32_t a = 0; a < model.num_assumptions; ++a) {
    const onnxc_assumption &assumption = model.assumptions[a];
    std::string what = "assumption " + std::to_string(a);
    if (!assumption.message)
      return what + " has no message";
    if (assumption.kind != ONNXC_ASSUME_ZERO && assumption.kind != ONNXC_ASSUME_NONNEGATIVE)
      return what + " has an invalid kind " + std::to_string(assumption.kind);
    if (!isWellFormedDimExpr(assumption.expr, model.num_symbols))
      return what + " (" + quoted(assumption.message) + ") has a malformed expression";
  }
  return "";
}

std::string checkModel(const onnxc_model_descriptor &model) {
  if (auto error = checkTensorInfos(model, "input", model.num_inputs, model.inputs); !error.empty())
    return error;
  if (auto error = checkTensorInfos(model, "output", model.num_outputs, model.outputs);
      !error.empty())
    return error;
  if (model.num_cache_pairs < 0 || (model.num_cache_pairs > 0 && !model.cache_pairs))
    return "the cache pair table is missing or has a negative count";
  if (auto error = checkSymbols(model); !error.empty())
    return error;
  if (auto error = checkCachePairs(model); !error.empty())
    return error;
  if (model.num_buffers < 0 || (model.num_buffers > 0 && !model.buffers))
    return "the buffer table is missing or has a negative count";
  for (int32_t b = 0; b < model.num_buffers; ++b)
    if (auto error = checkBuffer(model, b); !error.empty())
      return error;
  if (auto error = checkBufferCoverage(model); !error.empty())
    return error;
  if (auto error = checkAssumptions(model); !error.empty())
    return error;
  return checkSteps(model);
}

} // namespace

std::string checkDescriptor(const onnxc_model_descriptor *model) {
  if (!model)
    return "the model descriptor is NULL";
  // Compare the version before reading anything else: another ABI may lay
  // the rest of the struct out differently.
  if (model->abi_version != ONNXC_ABI_VERSION)
    return "model was compiled for ABI v" + std::to_string(model->abi_version) +
           ", this runtime is v" + std::to_string(ONNXC_ABI_VERSION);
  std::string error = checkModel(*model);
  if (error.empty())
    return "";
  return "model " + quoted(model->model_name) + ": " + error;
}

} // namespace onnxc::runtime
