//===- tools/onnxc/RunInputs.cpp - Inputs of `onnxc run` --------------------===//
#include "tools/onnxc/RunInputs.h"

#include "ir/Error.h"
#include "ir/IndexTables.h"
#include "tools/onnxc/CommandLine.h"
#include "tools/onnxc/Npy.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <random>

namespace onnxc {

namespace {

using Bindings = std::map<std::string, int64_t>;

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

/// Binds the plain symbols of `input`'s declared shape to `dims`.
void bindSymbols(const Value &input, const std::vector<int64_t> &dims, const std::string &source,
                 Bindings &bindings) {
  const Shape &shape = input.shape();
  if (!shape.isRanked())
    return;
  if (shape.rank() != dims.size())
    fail("input '", input.name(), "': ", source, " has rank ", dims.size(), ", the model expects ",
         input.type().str());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!shape[i].isSymbol())
      continue;
    auto [it, inserted] = bindings.emplace(shape[i].symbolName(), dims[i]);
    if (!inserted && it->second != dims[i])
      fail("input '", input.name(), "': ", source, " makes '", it->first, "' ", dims[i],
           " but another input made it ", it->second);
  }
}

/// Checks constant and expression dims once every symbol is bound.
void checkDims(const Value &input, const std::vector<int64_t> &dims, const std::string &source,
               const Bindings &bindings) {
  const Shape &shape = input.shape();
  if (!shape.isRanked())
    return;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (shape[i].isUnknown())
      continue;
    std::optional<int64_t> expected = shape[i].evaluate(bindings);
    if (expected && *expected != dims[i])
      fail("input '", input.name(), "': ", source, " has dim ", i, " = ", dims[i],
           ", the model expects ",
           shape[i].isConstant() ? std::to_string(*expected)
                                 : shape[i].str() + " = " + std::to_string(*expected),
           " (", input.type().str(), ")");
  }
}

std::vector<int64_t> resolveDims(const Value &input, const Bindings &bindings) {
  const Shape &shape = input.shape();
  std::vector<int64_t> dims;
  std::optional<int64_t> d;
  if (shape.isRanked())
    for (const Dim &dim : shape.dims()) {
      if (!(d = dim.evaluate(bindings)))
        break;
      dims.push_back(*d);
    }
  if (!shape.isRanked())
    fail("input '", input.name(), "' (", input.type().str(),
         ") has dims no other input determines (its rank is unknown); give --input ", input.name(),
         "=FILE.npy");
  if (dims.size() != shape.rank())
    fail("input '", input.name(), "' (", input.type().str(),
         ") has dims no other input determines (dim ", dims.size(), ", '", shape[dims.size()].str(),
         "'); give --shape ", input.name(), "=... or --input ", input.name(), "=FILE.npy");
  return dims;
}

/// The exclusive upper bound for an integer input used as Gather or
/// GatherElements indices (the smallest gathered axis among its uses,
/// ir/IndexTables.h, and the bound the request knows), or 0 when it is none.
int64_t gatherIndexBound(const Value &input, const Bindings &bindings,
                         const InputRequest &request) {
  int64_t bound = 0;
  for (const Dim &dim : indexedTableDims(input)) {
    std::optional<int64_t> size = dim.evaluate(bindings);
    if (size && *size > 0)
      bound = bound ? std::min(bound, *size) : *size;
  }
  auto known = request.indexBounds.find(input.name());
  if (known != request.indexBounds.end() && known->second > 0)
    bound = bound ? std::min(bound, known->second) : known->second;
  return bound;
}

bool nameSaysMask(const std::string &name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower.find("mask") != std::string::npos;
}

bool nameSaysPadding(const std::string &name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower.find("padding") != std::string::npos;
}

/// FNV-1a: a stable per-input stream, so adding one --input does not change
/// the values generated for the others.
uint64_t streamSeed(uint64_t seed, const std::string &name) {
  uint64_t h = 14695981039346656037ULL ^ seed;
  for (unsigned char c : name)
    h = (h ^ c) * 1099511628211ULL;
  return h;
}

Tensor generate(const Value &input, std::vector<int64_t> dims, const Bindings &bindings,
                const InputRequest &request, std::string &description) {
  DType dtype = input.dtype();
  if (dtype == DType::Unknown)
    fail("input '", input.name(), "' has an unknown dtype; give --input ", input.name(),
         "=FILE.npy");
  Tensor tensor(dtype, std::move(dims));
  // mt19937_64 is fully specified; the distributions of <random> are not,
  // so values are drawn from its raw output to be the same everywhere.
  std::mt19937_64 rng(streamSeed(request.seed, input.name()));
  int64_t bound = 10;
  bool mask = dtype == DType::Bool || nameSaysMask(input.name());
  if (mask)
    bound = 2;
  if (int64_t gather = gatherIndexBound(input, bindings, request)) {
    bound = gather;
    mask = false;
  }
  // An attention mask says 1 where a position is attended; torch's
  // key_padding_mask says true where one is padding: no padding is zeros.
  bool constantMask = mask && request.masksAreOnes;
  double fill = nameSaysPadding(input.name()) ? 0.0 : 1.0;
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    uint64_t bits = rng();
    if (isFloat(dtype))
      tensor.setElementFromDouble(i, double(bits >> 40) * 0x1p-23 - 1.0);
    else
      tensor.setElementFromDouble(i, constantMask ? fill : double(bits % uint64_t(bound)));
  }
  if (isFloat(dtype))
    description = "random in [-1, 1)";
  else if (constantMask)
    description = fill ? "ones" : "zeros (no padding)";
  else
    description = "random in [0, " + std::to_string(bound) + ")" +
                  (bound != 10 && !mask ? " (the rows of the table it indexes)" : "");
  return tensor;
}

/// "1x16" when the given inputs determine every dim of `input`, else "DIMS".
std::string suggestedShape(const Value &input, const Bindings &bindings) {
  const Shape &shape = input.shape();
  if (!shape.isRanked())
    return "DIMS";
  std::string text;
  for (const Dim &dim : shape.dims()) {
    std::optional<int64_t> value = dim.evaluate(bindings);
    if (!value)
      return "DIMS";
    text += (text.empty() ? "" : "x") + std::to_string(*value);
  }
  return shape.rank() == 0 ? "" : text;
}

/// Every input neither --input nor --shape gives is an error naming it (all
/// of them at once), with the options that would give it.
void refuseMissingInputs(const Graph &graph, const InputRequest &request,
                         const Bindings &bindings) {
  std::vector<const Value *> missing;
  for (const Value *input : graph.inputs())
    if (!request.files.count(input->name()) && !request.shapes.count(input->name()))
      missing.push_back(input);
  if (missing.empty())
    return;
  if (missing.size() == 1) {
    const Value &input = *missing[0];
    fail("input '", input.name(), "' (", input.type().str(), ") is not given: pass --input ",
         input.name(), "=FILE.npy, or --shape ", input.name(), "=", suggestedShape(input, bindings),
         " to run on random values");
  }
  std::string list;
  for (const Value *input : missing)
    list += (list.empty() ? "'" : ", '") + input->name() + "' (" + input->type().str() + ")";
  fail(missing.size(), " inputs are not given: ", list,
       "; pass --input NAME=FILE.npy, or --shape NAME=DIMS to run on random values, for each");
}

} // namespace

std::vector<int64_t> parseShapeText(const std::string &text, const std::string &option) {
  std::vector<int64_t> dims;
  if (text.empty())
    return dims;
  size_t start = 0;
  while (true) {
    size_t x = text.find('x', start);
    std::string piece = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (piece.empty() || piece.size() > 12 ||
        !std::all_of(piece.begin(), piece.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw UsageError("bad shape '" + text + "' in " + option + " (expected dims like 1x128)");
    dims.push_back(std::stoll(piece));
    if (x == std::string::npos)
      return dims;
    start = x + 1;
  }
}

std::map<std::string, Tensor> prepareInputs(const Graph &graph, const InputRequest &request,
                                            MissingInputs missing, GeneratedInputs *generated) {
  auto checkName = [&](const std::string &name, const char *option) {
    if (!graph.findValue(name) || !graph.findValue(name)->isGraphInput()) {
      std::string known;
      for (const Value *input : graph.inputs())
        known += (known.empty() ? "" : ", ") + input->name();
      fail(option, " ", name, ": the model has no input named '", name, "' (inputs: ", known, ")");
    }
  };
  for (const auto &[name, path] : request.files)
    checkName(name, "--input");
  for (const auto &[name, dims] : request.shapes) {
    checkName(name, "--shape");
    if (request.files.count(name))
      fail("input '", name, "' is given both a file (--input) and a shape (--shape)");
  }

  std::map<std::string, Tensor> tensors;
  Bindings bindings;
  for (const auto &[name, path] : request.files) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      fail("input '", name, "': ", path, " is a directory, not an .npy file");
    Tensor t = readNpy(path);
    const Value &input = *graph.findValue(name);
    if (input.dtype() != DType::Unknown && t.dtype() != input.dtype())
      fail("input '", name, "': ", path, " holds ", dtypeName(t.dtype()), ", the model expects ",
           input.type().str());
    bindSymbols(input, t.dims(), path, bindings);
    tensors.emplace(name, t);
  }
  for (const auto &[name, dims] : request.shapes)
    bindSymbols(*graph.findValue(name), dims, "--shape " + dimsText(dims), bindings);
  for (const auto &[name, t] : tensors)
    checkDims(*graph.findValue(name), t.dims(), request.files.at(name), bindings);
  for (const auto &[name, dims] : request.shapes)
    checkDims(*graph.findValue(name), dims, "--shape " + dimsText(dims), bindings);

  if (missing == MissingInputs::Refuse)
    refuseMissingInputs(graph, request, bindings);
  GeneratedInputs report;
  for (const auto &[symbol, value] : request.defaultSymbols)
    if (bindings.emplace(symbol, value).second)
      report.defaultedSymbols.emplace_back(symbol, value);
  for (const Value *input : graph.inputs()) {
    if (tensors.count(input->name()))
      continue;
    auto shaped = request.shapes.find(input->name());
    std::vector<int64_t> dims =
        shaped != request.shapes.end() ? shaped->second : resolveDims(*input, bindings);
    std::string &description = report.values[input->name()];
    tensors.emplace(input->name(),
                    generate(*input, std::move(dims), bindings, request, description));
  }
  if (generated)
    *generated = std::move(report);
  return tensors;
}

} // namespace onnxc
