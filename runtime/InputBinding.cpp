//===- runtime/InputBinding.cpp - Checking inputs and binding symbols ------===//
#include "InputBinding.h"

#include "DimExpr.h"
#include "DimExprQueries.h"
#include "Dtype.h"

#include <algorithm>

namespace onnxc::runtime {

namespace {

std::string inputLabel(const onnxc_tensor_info &info) {
  return "input '" + std::string(info.name) + "'";
}

std::string describeCount(const onnxc_model_descriptor &model) {
  std::string text =
      std::to_string(model.num_inputs) + " input" + (model.num_inputs == 1 ? "" : "s");
  for (int32_t i = 0; i < model.num_inputs; ++i)
    text += std::string(i == 0 ? " (" : ", ") + "'" + model.inputs[i].name + "'";
  return model.num_inputs > 0 ? text + ")" : text;
}

/// Dtype, rank, non-negative dims and data present; no symbol involved yet.
std::string checkInputLayout(const onnxc_tensor_info &info, const onnxc_tensor &input) {
  auto label = [&] { return inputLabel(info); };
  if (input.dtype != info.dtype)
    return label() + ": dtype is " + dtypeName(input.dtype) + " but the model needs " +
           dtypeName(info.dtype);
  if (input.rank != info.rank)
    return label() + ": rank is " + std::to_string(input.rank) + " but the model needs " +
           std::to_string(info.rank) + " " + (info.shape_text ? info.shape_text : "");
  bool empty = false;
  for (int32_t axis = 0; axis < input.rank; ++axis) {
    if (input.dims[axis] < 0)
      return label() + ": dim " + std::to_string(axis) + " is " + std::to_string(input.dims[axis]) +
             "; dims must be >= 0";
    empty |= input.dims[axis] == 0;
  }
  if (!input.data && !empty)
    return label() + ": data is NULL (every input needs its values)";
  return "";
}

/// Bytes the dims need, or -1 when that overflows; the checks above made
/// every dim non-negative.
int64_t neededBytes(const onnxc_tensor &input) {
  int64_t bytes = dtypeSize(input.dtype);
  for (int32_t axis = 0; axis < input.rank; ++axis)
    if (__builtin_mul_overflow(bytes, input.dims[axis], &bytes))
      return -1;
  return bytes;
}

/// A caller that says how many bytes it passes (size_bytes != 0; 0 means
/// "not said", as before inputs had to say it) must pass enough for the
/// dims: the kernels would read past the buffer otherwise.
std::string checkInputSize(const onnxc_tensor_info &info, const onnxc_tensor &input) {
  if (input.size_bytes == 0)
    return "";
  int64_t needed = neededBytes(input);
  if (needed >= 0 && uint64_t(needed) <= uint64_t(input.size_bytes))
    return "";
  std::string dims;
  for (int32_t axis = 0; axis < input.rank; ++axis)
    dims += (axis ? ", " : "") + std::to_string(input.dims[axis]);
  return inputLabel(info) + ": size_bytes is " + std::to_string(input.size_bytes) + " but " +
         dtypeName(input.dtype) + " [" + dims + "] needs " +
         (needed < 0 ? "more than 2^63" : std::to_string(needed));
}

/// "'attention_mask' is missing" for the model inputs past the given ones.
std::string describeMissing(const onnxc_model_descriptor &model, int32_t given) {
  if (given < 0 || given >= model.num_inputs)
    return "";
  std::string names;
  for (int32_t i = given; i < model.num_inputs; ++i)
    names += std::string(i == given ? "'" : ", '") + model.inputs[i].name + "'";
  return ": " + names + (model.num_inputs - given == 1 ? " is" : " are") + " missing";
}

/// "seq = 7 (bound by input 'input_ids')", or just "4" for a constant dim.
std::string describeExpected(const onnxc_model_descriptor &model, int32_t inputIndex,
                             onnxc_dim_expr expr, int64_t expected, const int64_t *symbols) {
  std::string text = formatDimExpr(expr, model.symbol_names);
  std::vector<int32_t> used = symbolsOf(expr);
  if (used.empty())
    return text;
  text += " = " + std::to_string(expected) + " (";
  bool justOneSymbol = singleSymbolOf(expr).has_value();
  for (size_t i = 0; i < used.size(); ++i) {
    int32_t symbol = used[i];
    onnxc_symbol_source source = model.symbol_sources[symbol];
    if (i > 0)
      text += ", ";
    if (source.input < 0) {
      text += "bound by the cache capacity";
      continue;
    }
    if (!justOneSymbol)
      text +=
          std::string(model.symbol_names[symbol]) + " = " + std::to_string(symbols[symbol]) + " ";
    if (source.input == inputIndex)
      text += "bound by dim " + std::to_string(source.axis) + " of this input";
    else
      text += "bound by " + inputLabel(model.inputs[source.input]);
  }
  return text + ")";
}

std::string checkInputDims(const onnxc_model_descriptor &model, int32_t inputIndex,
                           const onnxc_tensor &input, const int64_t *symbols) {
  const onnxc_tensor_info &info = model.inputs[inputIndex];
  for (int32_t axis = 0; axis < info.rank; ++axis) {
    onnxc_dim_expr expr = info.dims[axis];
    std::optional<int64_t> expected = evaluateDimExpr(expr, symbols, model.num_symbols);
    // Messages are built only on failure: a run that passes allocates nothing.
    auto where = [&] { return inputLabel(info) + ": dim " + std::to_string(axis); };
    if (!expected)
      return where() + " must be " + formatDimExpr(expr, model.symbol_names) +
             ", which overflows for the bound symbols";
    if (input.dims[axis] != *expected)
      return where() + " is " + std::to_string(input.dims[axis]) + " but the model needs " +
             describeExpected(model, inputIndex, expr, *expected, symbols);
  }
  return "";
}

/// The compiled code relies on these (model_abi.h, onnxc_assumption); an
/// input breaking one would be computed on a shape it does not have.
std::string checkAssumptions(const onnxc_model_descriptor &model, const int64_t *symbols) {
  for (int32_t a = 0; a < model.num_assumptions; ++a) {
    const onnxc_assumption &assumption = model.assumptions[a];
    std::optional<int64_t> value = evaluateDimExpr(assumption.expr, symbols, model.num_symbols);
    bool holds = value && (assumption.kind == ONNXC_ASSUME_ZERO ? *value == 0 : *value >= 0);
    if (holds)
      continue;
    std::string bound;
    for (int32_t symbol : symbolsOf(assumption.expr))
      bound += (bound.empty() ? "" : ", ") + std::string(model.symbol_names[symbol]) + " = " +
               std::to_string(symbols[symbol]);
    return std::string(assumption.message) + "; the inputs give " + bound;
  }
  return "";
}

/// Binds every capacity symbol after the others: the session's capacity,
/// else the length of the past or present it lays out (the dense layouts of
/// an ordinary run); a capacity below a present's length would overlap rows.
std::string bindCacheCapacities(const onnxc_model_descriptor &model, const onnxc_tensor *inputs,
                                int64_t *symbols, int64_t cacheCapacity) {
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    symbols[model.cache_pairs[p].capacity_symbol] = cacheCapacity;
    symbols[model.cache_pairs[p].past_capacity_symbol] = cacheCapacity;
  }
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model.cache_pairs[p];
    const onnxc_tensor_info &present = model.outputs[pair.output];
    std::optional<int64_t> length =
        evaluateDimExpr(present.dims[pair.axis], symbols, model.num_symbols);
    if (!length)
      return "output '" + std::string(present.name) + "': dim " + std::to_string(pair.axis) +
             " overflows for the bound symbols";
    if (cacheCapacity <= 0) {
      int64_t &rows = symbols[pair.capacity_symbol];
      int64_t &pastRows = symbols[pair.past_capacity_symbol];
      rows = std::max(rows, *length);
      pastRows = std::max(pastRows, inputs[pair.input].dims[pair.axis]);
    } else if (*length > cacheCapacity) {
      return "output '" + std::string(present.name) + "' needs " + std::to_string(*length) +
             " positions on axis " + std::to_string(pair.axis) + " but the cache capacity is " +
             std::to_string(cacheCapacity) + " (onnxc_session_set_cache_capacity)";
    }
  }
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model.cache_pairs[p];
    const onnxc_tensor &input = inputs[pair.input];
    if (input.size_bytes == 0)
      continue;
    int64_t bytes = dtypeSize(input.dtype);
    bool overflow = false;
    for (int32_t axis = 0; axis < input.rank; ++axis)
      overflow |= __builtin_mul_overflow(
          bytes, axis == pair.axis ? symbols[pair.past_capacity_symbol] : input.dims[axis], &bytes);
    if (overflow || uint64_t(bytes) > uint64_t(input.size_bytes))
      return inputLabel(model.inputs[pair.input]) + ": size_bytes is " +
             std::to_string(input.size_bytes) + " but a cache of capacity " +
             std::to_string(symbols[pair.past_capacity_symbol]) + " needs " +
             (overflow ? "more than 2^63" : std::to_string(bytes));
  }
  return "";
}

} // namespace

std::string bindInputs(const onnxc_model_descriptor &model, const onnxc_tensor *inputs,
                       int32_t numInputs, int64_t *symbols, int64_t cacheCapacity) {
  if (numInputs != model.num_inputs)
    return "the model takes " + describeCount(model) + " but " + std::to_string(numInputs) +
           (numInputs == 1 ? " was" : " were") + " given" + describeMissing(model, numInputs);
  if (numInputs > 0 && !inputs)
    return "the input array is NULL";
  for (int32_t i = 0; i < numInputs; ++i)
    if (std::string error = checkInputLayout(model.inputs[i], inputs[i]); !error.empty())
      return error;
  for (int32_t i = 0; i < numInputs; ++i)
    if (std::string error = checkInputSize(model.inputs[i], inputs[i]); !error.empty())
      return error;
  for (int32_t s = 0; s < model.num_symbols; ++s) {
    onnxc_symbol_source source = model.symbol_sources[s];
    symbols[s] = source.input >= 0 ? inputs[source.input].dims[source.axis] : 0;
  }
  for (int32_t i = 0; i < numInputs; ++i)
    if (std::string error = checkInputDims(model, i, inputs[i], symbols); !error.empty())
      return error;
  if (std::string error = bindCacheCapacities(model, inputs, symbols, cacheCapacity);
      !error.empty())
    return error;
  return checkAssumptions(model, symbols);
}

} // namespace onnxc::runtime
