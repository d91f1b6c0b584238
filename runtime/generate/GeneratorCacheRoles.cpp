//===- runtime/generate/GeneratorCacheRoles.cpp - Which inputs and outputs are cache pairs -===//
//
// A past input and its present output pair up by the mapping, by the
// compiler's proof (the descriptor's onnxc_cache_pair) or by their names.
// A pair either grows (present = past + new positions along its sequence
// axis) or keeps a fixed length (opset 24's present = TensorScatter(past,
// new, write_indices), of the past's shape); the generator drives one kind.
//
//===----------------------------------------------------------------------===//
#include "GeneratorRolesInternal.h"

#include "DimExpr.h"
#include "DimExprQueries.h"
#include "Dtype.h"

namespace onnxc::runtime::roles {

namespace {

using Kind = GeneratorRoles::SymbolKind;

/// A cache name without its "past"/"present" word, so that past_key_0 and
/// present_key_0 (or past_key_values.0.key and present.0.key) meet.
std::string cacheKey(const std::string &name, bool isPast) {
  static const char *const pastWords[] = {"past_key_values", "past"};
  static const char *const presentWords[] = {"present_key_values", "present"};
  std::string text = lower(name);
  for (const char *word : isPast ? pastWords : presentWords) {
    size_t at = text.find(word);
    if (at != std::string::npos)
      return text.erase(at, std::string(word).size());
  }
  return "";
}

/// Per input, the present the descriptor pairs it with (ABI v5: proved at
/// compile time, codegen/lower/CachePairs.cpp), or -1: none, or the mapping
/// or another role decides that input.
std::vector<int32_t> declaredPresents(const onnxc_model_descriptor &model, const Mapping &mapping,
                                      const GeneratorRoles &roles) {
  std::vector<int32_t> present(size_t(model.num_inputs), -1);
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model.cache_pairs[p];
    if (!mapping.cache.count(model.inputs[pair.input].name) && !hasOtherRole(roles, pair.input))
      present[size_t(pair.input)] = pair.output;
  }
  return present;
}

/// The output named like past input `name` with "present" for its "past"
/// word, not yet `taken`; -1 when none is.
int32_t presentNamedLike(const onnxc_model_descriptor &model, const char *name,
                         const std::vector<bool> &taken) {
  std::string key = cacheKey(name, true);
  for (int32_t o = 0; o < model.num_outputs; ++o)
    if (!taken[size_t(o)] && contains(model.outputs[o].name, "present") &&
        cacheKey(model.outputs[o].name, false) == key)
      return o;
  return -1;
}

/// Whether two dims are one symbol, or one constant.
bool sameDim(onnxc_dim_expr a, onnxc_dim_expr b, int32_t numSymbols) {
  std::optional<int32_t> symbolA = singleSymbolOf(a), symbolB = singleSymbolOf(b);
  if (symbolA || symbolB)
    return symbolA == symbolB;
  if (!isConstantDimExpr(a) || !isConstantDimExpr(b))
    return false;
  std::vector<int64_t> none(size_t(numSymbols), 0);
  return evaluateDimExpr(a, none.data(), numSymbols) == evaluateDimExpr(b, none.data(), numSymbols);
}

/// The sequence axis the compiler proved for the pair (onnxc_cache_pair), or -1.
int32_t declaredAxis(const onnxc_model_descriptor &model, const CachePair &pair) {
  for (int32_t p = 0; p < model.num_cache_pairs; ++p)
    if (model.cache_pairs[p].input == pair.input && model.cache_pairs[p].output == pair.output)
      return model.cache_pairs[p].axis;
  return -1;
}

/// A pair's sequence axis: the past's last dim that is a symbol of its own
/// (a growing cache's 'past', or a fixed cache's length when the present has
/// the same), else the constant axis the compiler proved for present =
/// TensorScatter(past, ..). -1: none.
int32_t findCacheAxis(const onnxc_model_descriptor &model, const CachePair &pair,
                      const SymbolKinds &kinds) {
  const onnxc_tensor_info &past = model.inputs[pair.input];
  int32_t found = -1;
  for (int32_t axis = 0; axis < past.rank; ++axis) {
    std::optional<int32_t> symbol = singleSymbolOf(past.dims[axis]);
    if (symbol &&
        (!kinds[*symbol] || kinds[*symbol] == Kind::Past || kinds[*symbol] == Kind::CacheLength))
      found = axis;
  }
  int32_t proved = declaredAxis(model, pair);
  if (found < 0 && proved > 0 && proved < past.rank && isConstantDimExpr(past.dims[proved]))
    found = proved;
  return found;
}

/// Whether a pair without a sequence axis is a state: its present has its
/// past's shape, constant but for the batch (a recurrent state, or a
/// fixed-length cache the in-place proof refused: both are fed back whole).
bool isStatePair(const onnxc_model_descriptor &model, const CachePair &pair) {
  const onnxc_tensor_info &past = model.inputs[pair.input], &present = model.outputs[pair.output];
  for (int32_t axis = 0; axis < past.rank; ++axis)
    if (!sameDim(past.dims[axis], present.dims[axis], model.num_symbols) ||
        (axis > 0 && !isConstantDimExpr(past.dims[axis])))
      return false;
  return past.rank > 0;
}

/// -1 when the pair grows along `axis`; else its fixed length (0: symbolic).
int64_t fixedLengthOf(const onnxc_model_descriptor &model, const CachePair &pair) {
  const onnxc_dim_expr past = model.inputs[pair.input].dims[pair.axis];
  if (!sameDim(past, model.outputs[pair.output].dims[pair.axis], model.num_symbols))
    return -1;
  if (!isConstantDimExpr(past))
    return 0;
  std::vector<int64_t> none(size_t(model.num_symbols), 0);
  return evaluateDimExpr(past, none.data(), model.num_symbols).value_or(0);
}

} // namespace

/// The cache pairs: the mapping's, then the descriptor's, then by name. The
/// descriptor lists only the pairs the compiler proved to be
/// present = Concat(past, new) (the ones it can update in place); a cache
/// whose present is computed otherwise, or a model compiled before ABI v5
/// or with a hand-built descriptor, still feeds its present back as its
/// past, so such inputs are paired by their names as before.
std::string findCache(const onnxc_model_descriptor &model, const Mapping &mapping,
                      GeneratorRoles &roles) {
  std::vector<int32_t> declared = declaredPresents(model, mapping, roles);
  std::vector<bool> taken(size_t(model.num_outputs), false);
  for (int32_t output : declared)
    if (output >= 0)
      taken[size_t(output)] = true;
  for (int32_t i = 0; i < model.num_inputs; ++i) {
    const char *name = model.inputs[i].name;
    int32_t output = -1;
    if (auto it = mapping.cache.find(name); it != mapping.cache.end()) {
      output = findOutput(model, it->second);
    } else if (declared[size_t(i)] >= 0) {
      output = declared[size_t(i)];
    } else {
      if (hasOtherRole(roles, i) || !contains(name, "past"))
        continue;
      output = presentNamedLike(model, name, taken);
      if (output < 0)
        return "cache input " + quoted(name) +
               " has no matching output (one named like it with 'present' for 'past'); pair them "
               "with " +
               std::string(name) + "=OUTPUT";
    }
    const onnxc_tensor_info &past = model.inputs[i], &present = model.outputs[output];
    if (past.dtype != present.dtype || past.rank != present.rank)
      return "cache input " + quoted(past.name) + " is " + dtypeName(past.dtype) + " " +
             past.shape_text + " but its output " + quoted(present.name) + " is " +
             dtypeName(present.dtype) + " " + present.shape_text;
    taken[size_t(output)] = true;
    roles.cache.push_back({i, output});
  }
  return "";
}

/// Gives the pairs their axes and kinds: the caches all grow, or are all
/// fixed at one length (a symbol the generator sets to its capacity, or a
/// constant that is the capacity); a state has no axis and is fed back whole.
std::string classifyCachePairs(const onnxc_model_descriptor &model, GeneratorRoles &roles,
                               SymbolKinds &kinds) {
  const CachePair *first = nullptr;
  int64_t length = -1;
  for (CachePair &pair : roles.cache) {
    const onnxc_tensor_info &past = model.inputs[pair.input];
    pair.axis = findCacheAxis(model, pair, kinds);
    if (pair.axis < 0) {
      if (isStatePair(model, pair))
        continue;
      return "cache input " + quoted(past.name) + " " + past.shape_text +
             " has no symbolic length of its own (a dim such as 'past'), no fixed length the "
             "compiler proved (present = TensorScatter(past, ...)) and is no state (its output " +
             quoted(model.outputs[pair.output].name) + " " + model.outputs[pair.output].shape_text +
             " of the same constant shape)";
    }
    int64_t fixedLength = fixedLengthOf(model, pair);
    if (fixedLength == 0 && isConstantDimExpr(past.dims[pair.axis]))
      return "cache input " + quoted(past.name) + " " + past.shape_text + " holds no positions";
    if (!first) {
      first = &pair;
      length = fixedLength;
    } else if (fixedLength != length) {
      auto describe = [&](const CachePair &p, int64_t l) {
        return quoted(model.inputs[p.input].name) + " " + model.inputs[p.input].shape_text +
               (l < 0 ? " grows" : " is fixed-length");
      };
      return "cache inputs " + describe(*first, length) + " and " + describe(pair, fixedLength) +
             "; the generator needs every cache to grow, or every one fixed at one length";
    }
    if (std::optional<int32_t> symbol = singleSymbolOf(past.dims[pair.axis]))
      kinds[size_t(*symbol)] = length >= 0 ? Kind::CacheLength : Kind::Past;
  }
  roles.fixedLength = length;
  return "";
}

} // namespace onnxc::runtime::roles
