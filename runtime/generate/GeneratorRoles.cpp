//===- runtime/generate/GeneratorRoles.cpp - Which inputs and outputs a decoder has -===//
#include "GeneratorRoles.h"
#include "GeneratorRolesInternal.h"

#include "DimExpr.h"
#include "DimExprQueries.h"
#include "Dtype.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>

namespace onnxc::runtime {

using namespace roles;

namespace {

using Kind = GeneratorRoles::SymbolKind;

constexpr const char *kEncoderPrefix = "encoder:";
constexpr const char *kSourceMask = "source_mask";

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t"), end = text.find_last_not_of(" \t");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

std::string parseMapping(const onnxc_model_descriptor &model, const onnxc_model_descriptor *encoder,
                         const std::string &text, Mapping &mapping) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string entry =
        trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (entry.empty())
      continue;
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0)
      return "mapping: expected ROLE=NAME, got '" + entry + "'";
    std::string key = trim(entry.substr(0, eq)), value = trim(entry.substr(eq + 1));
    if (key == "input_ids" || key == "attention_mask" || key == "position_ids" ||
        key == "write_indices" || key == "nonpad_kv_seqlen") {
      if (!value.empty() && findInput(model, value) < 0)
        return "mapping: " + key + "=" + value + " names no input of the model";
      mapping.roles[key] = value;
    } else if (key == "logits") {
      if (findOutput(model, value) < 0)
        return "mapping: logits=" + value + " names no output of the model";
      mapping.roles[key] = value;
    } else if (findInput(model, key) >= 0 &&
               (value == kSourceMask || value.rfind(kEncoderPrefix, 0) == 0)) {
      if (!encoder)
        return "mapping: " + key + "=" + value +
               " feeds a decoder input from an encoder, but there is no encoder";
      std::string output = value == kSourceMask ? "" : value.substr(std::strlen(kEncoderPrefix));
      if (!output.empty() && findOutput(*encoder, output) < 0)
        return "mapping: " + key + "=" + value + " names no output of the encoder";
      mapping.context[key] = output;
    } else if (findInput(model, key) >= 0) {
      if (findOutput(model, value) < 0)
        return "mapping: cache input '" + key + "' is paired with '" + value +
               "', which is no output of the model";
      mapping.cache[key] = value;
    } else {
      return "mapping: '" + key +
             "' is neither a role (input_ids, attention_mask, position_ids, write_indices, "
             "nonpad_kv_seqlen, logits) nor an input of the model";
    }
  }
  return "";
}

/// The input for a role: the mapping's, else the first that `matches`.
/// A mapping with an empty name says the model has none.
int32_t pickInput(const onnxc_model_descriptor &model, const Mapping &mapping,
                  const GeneratorRoles &roles, const char *role, bool (*matches)(const char *)) {
  if (auto it = mapping.roles.find(role); it != mapping.roles.end())
    return it->second.empty() ? -1 : findInput(model, it->second);
  for (int32_t i = 0; i < model.num_inputs; ++i)
    if (matches(model.inputs[i].name) && !mapping.cache.count(model.inputs[i].name) &&
        !isContextInput(roles, i))
      return i;
  return -1;
}

bool looksLikeMask(const char *name) { return contains(name, "mask") && !contains(name, "past"); }
bool looksLikePositions(const char *name) {
  return contains(name, "position") && !contains(name, "past");
}
bool looksLikeWriteIndices(const char *name) {
  return contains(name, "write_ind") || contains(name, "cache_ind");
}
bool looksLikeValidLengths(const char *name) {
  return contains(name, "nonpad") || contains(name, "kv_seqlen");
}
bool isExactlyInputIds(const char *name) { return lower(name) == "input_ids"; }
bool looksLikeInputIds(const char *name) { return contains(name, "input_ids"); }

std::string findIds(const onnxc_model_descriptor &model, const Mapping &mapping,
                    GeneratorRoles &roles) {
  roles.ids = pickInput(model, mapping, roles, "input_ids", isExactlyInputIds);
  if (roles.ids < 0 && !mapping.roles.count("input_ids"))
    roles.ids = pickInput(model, mapping, roles, "input_ids", looksLikeInputIds);
  if (roles.ids < 0 && !mapping.roles.count("input_ids")) {
    // The one rank-2 integer input that is nothing else.
    for (int32_t i = 0; i < model.num_inputs; ++i) {
      const onnxc_tensor_info &info = model.inputs[i];
      if (info.rank != 2 || !isInteger(info.dtype) || i == roles.mask || i == roles.positions ||
          contains(info.name, "past") || mapping.cache.count(info.name) || isContextInput(roles, i))
        continue;
      if (roles.ids >= 0)
        return "cannot tell the token ids input: " + quoted(model.inputs[roles.ids].name) +
               " and " + quoted(info.name) + " both fit; name it with input_ids=NAME";
      roles.ids = i;
    }
  }
  if (roles.ids < 0)
    return "the model has no token ids input (an integer [batch, seq] input named input_ids); "
           "name it with input_ids=NAME";
  const onnxc_tensor_info &info = model.inputs[roles.ids];
  if (info.rank != 2 || !isInteger(info.dtype))
    return "token ids input " + quoted(info.name) + " is " + dtypeName(info.dtype) + " " +
           (info.shape_text ? info.shape_text : "") +
           "; the generator needs i64 or i32 [batch, seq]";
  return "";
}

std::string findLogits(const onnxc_model_descriptor &model, const Mapping &mapping,
                       GeneratorRoles &roles) {
  auto isCacheOutput = [&](int32_t o) {
    return std::any_of(roles.cache.begin(), roles.cache.end(),
                       [o](const CachePair &pair) { return pair.output == o; });
  };
  if (auto it = mapping.roles.find("logits"); it != mapping.roles.end())
    roles.logits = findOutput(model, it->second);
  for (int32_t o = 0; o < model.num_outputs && roles.logits < 0; ++o)
    if (contains(model.outputs[o].name, "logits") && !isCacheOutput(o))
      roles.logits = o;
  if (roles.logits < 0) {
    for (int32_t o = 0; o < model.num_outputs; ++o) {
      const onnxc_tensor_info &info = model.outputs[o];
      if (isCacheOutput(o) || !isFloat(info.dtype) || (info.rank != 2 && info.rank != 3))
        continue;
      if (roles.logits >= 0)
        return "cannot tell the logits output: " + quoted(model.outputs[roles.logits].name) +
               " and " + quoted(info.name) + " both fit; name it with logits=NAME";
      roles.logits = o;
    }
  }
  if (roles.logits < 0)
    return "the model has no logits output (a float [batch, seq, vocab] output named logits); "
           "name it with logits=NAME";
  const onnxc_tensor_info &info = model.outputs[roles.logits];
  if (info.dtype != ONNXC_F32 || (info.rank != 2 && info.rank != 3))
    return "logits output " + quoted(info.name) + " is " + dtypeName(info.dtype) + " " +
           info.shape_text + "; the generator reads f32 [batch, seq, vocab] or [batch, vocab]";
  return "";
}

/// Gives every symbol a kind from the inputs that carry it; fails on one
/// the generator cannot set.
std::string classifySymbols(const onnxc_model_descriptor &model, GeneratorRoles &roles) {
  SymbolKinds kinds(size_t(model.num_symbols));
  auto assign = [&](const onnxc_tensor_info &info, int32_t axis, Kind kind) {
    if (std::optional<int32_t> symbol = singleSymbolOf(info.dims[axis]); symbol && !kinds[*symbol])
      kinds[size_t(*symbol)] = kind;
  };
  const onnxc_tensor_info &ids = model.inputs[roles.ids];
  assign(ids, 0, Kind::Batch);
  if (!singleSymbolOf(ids.dims[1]))
    return "token ids input " + quoted(ids.name) + " has sequence dim " +
           formatDimExpr(ids.dims[1], model.symbol_names) +
           "; the generator needs a symbolic length";
  assign(ids, 1, Kind::NewTokens);
  // A context input's other dims (the source length) come from the tensor
  // bound at encode; the cache's own length is then the symbol left over.
  for (const ContextInput &context : roles.context) {
    const onnxc_tensor_info &info = model.inputs[context.input];
    for (int32_t axis = 0; axis < info.rank; ++axis)
      assign(info, axis, Kind::Context);
  }
  if (std::string error = classifyCachePairs(model, roles, kinds); !error.empty())
    return error;
  for (int32_t role : {roles.writeIndices, roles.validLengths})
    if (role >= 0)
      assign(model.inputs[role], 0, Kind::Batch);
  if (roles.mask >= 0)
    assign(model.inputs[roles.mask], 1, roles.hasCache() ? Kind::Total : Kind::NewTokens);
  if (roles.positions >= 0)
    assign(model.inputs[roles.positions], 1, Kind::NewTokens);
  roles.symbolKinds.clear();
  for (int32_t s = 0; s < model.num_symbols; ++s) {
    if (!kinds[size_t(s)] && model.symbol_sources[s].input < 0)
      kinds[size_t(s)] = Kind::Capacity;
    if (!kinds[size_t(s)]) {
      onnxc_symbol_source source = model.symbol_sources[s];
      return "symbol '" + std::string(model.symbol_names[s]) + "' (dim " +
             std::to_string(source.axis) + " of input " + quoted(model.inputs[source.input].name) +
             ") is neither the batch, the sequence nor the cache length; the generator cannot "
             "set it";
    }
    roles.symbolKinds.push_back(*kinds[size_t(s)]);
  }
  return "";
}

std::string checkEveryInputHasARole(const onnxc_model_descriptor &model,
                                    const GeneratorRoles &roles) {
  for (int32_t i = 0; i < model.num_inputs; ++i) {
    bool known = hasOtherRole(roles, i) ||
                 std::any_of(roles.cache.begin(), roles.cache.end(),
                             [i](const CachePair &pair) { return pair.input == i; });
    if (!known)
      return "input " + quoted(model.inputs[i].name) +
             " is none of token ids, attention mask, position ids, write indices, valid lengths "
             "or a cache input" +
             (roles.context.empty() && !contains(model.inputs[i].name, "encoder")
                  ? ""
                  : " nor fed by the encoder") +
             "; the generator cannot fill it (name its role with the mapping)";
  }
  for (int32_t role : {roles.mask, roles.positions})
    if (role >= 0 && model.inputs[role].rank != 2)
      return "input " + quoted(model.inputs[role].name) + " is " + model.inputs[role].shape_text +
             "; a mask or position ids input must be [batch, length]";
  if (roles.positions >= 0 && !isInteger(model.inputs[roles.positions].dtype))
    return "position ids input " + quoted(model.inputs[roles.positions].name) + " is " +
           dtypeName(model.inputs[roles.positions].dtype) + "; the generator writes i64 or i32";
  for (int32_t role : {roles.writeIndices, roles.validLengths})
    if (role >= 0 && (model.inputs[role].rank != 1 || !isInteger(model.inputs[role].dtype)))
      return "input " + quoted(model.inputs[role].name) + " is " +
             dtypeName(model.inputs[role].dtype) + " " + model.inputs[role].shape_text +
             "; write indices and valid lengths must be i64 or i32 [batch]";
  return "";
}

bool looksLikeSourceMask(const char *name) {
  return contains(name, "mask") && (contains(name, "encoder") || contains(name, "source") ||
                                    contains(name, "src") || contains(name, "memory"));
}

bool looksLikeEncoderStates(const char *name) {
  return contains(name, "encoder_hidden_states") || contains(name, "encoder_output") ||
         lower(name) == "memory";
}

/// The encoder output that is its hidden states: a usual name, else the one
/// float rank-3 output.
std::string findEncoderStates(const onnxc_model_descriptor &encoder, int32_t &output) {
  for (const char *name : {"last_hidden_state", "encoder_hidden_states", "hidden_states",
                           "encoder_outputs", "encoder_output", "memory"})
    if ((output = findOutput(encoder, name)) >= 0)
      return "";
  for (int32_t o = 0; o < encoder.num_outputs; ++o) {
    const onnxc_tensor_info &info = encoder.outputs[o];
    if (!isFloat(info.dtype) || info.rank != 3)
      continue;
    if (output >= 0)
      return "cannot tell the encoder's hidden states: " + quoted(encoder.outputs[output].name) +
             " and " + quoted(info.name) + " both fit; feed the decoder with NAME=encoder:OUTPUT";
    output = o;
  }
  if (output < 0)
    return "the encoder has no hidden-states output (a float [batch, source, hidden] output "
           "such as last_hidden_state)";
  return "";
}

/// The decoder inputs fed from the encoder, the mapping's first.
std::string findContext(const onnxc_model_descriptor &model, const onnxc_model_descriptor &encoder,
                        const Mapping &mapping, GeneratorRoles &roles) {
  for (int32_t i = 0; i < model.num_inputs; ++i) {
    const onnxc_tensor_info &info = model.inputs[i];
    ContextInput context{i, -1};
    if (auto it = mapping.context.find(info.name); it != mapping.context.end()) {
      context.encoderOutput = it->second.empty() ? -1 : findOutput(encoder, it->second);
    } else if (std::any_of(mapping.roles.begin(), mapping.roles.end(),
                           [&](const auto &entry) { return entry.second == info.name; })) {
      continue; // The mapping gave it a decoder role.
    } else if (int32_t same = findOutput(encoder, info.name); same >= 0) {
      context.encoderOutput = same;
    } else if (looksLikeEncoderStates(info.name)) {
      if (std::string error = findEncoderStates(encoder, context.encoderOutput); !error.empty())
        return "decoder input " + quoted(info.name) + ": " + error;
    } else if (!looksLikeSourceMask(info.name)) {
      continue;
    }
    if (context.encoderOutput < 0) {
      if (info.rank != 2)
        return "decoder input " + quoted(info.name) + " is " + info.shape_text +
               "; a source mask must be [batch, source]";
    } else {
      const onnxc_tensor_info &output = encoder.outputs[context.encoderOutput];
      if (output.dtype != info.dtype || output.rank != info.rank)
        return "decoder input " + quoted(info.name) + " is " + dtypeName(info.dtype) + " " +
               info.shape_text + " but the encoder output " + quoted(output.name) +
               " that feeds it is " + dtypeName(output.dtype) + " " + output.shape_text;
    }
    roles.context.push_back(context);
  }
  return "";
}
} // namespace

std::string findRoles(const onnxc_model_descriptor &model, const std::string &mapping,
                      GeneratorRoles &roles, const onnxc_model_descriptor *encoder) {
  roles = GeneratorRoles();
  Mapping parsed;
  if (std::string error = parseMapping(model, encoder, mapping, parsed); !error.empty())
    return error;
  if (encoder)
    if (std::string error = findContext(model, *encoder, parsed, roles); !error.empty())
      return error;
  roles.mask = pickInput(model, parsed, roles, "attention_mask", looksLikeMask);
  roles.positions = pickInput(model, parsed, roles, "position_ids", looksLikePositions);
  roles.writeIndices = pickInput(model, parsed, roles, "write_indices", looksLikeWriteIndices);
  roles.validLengths = pickInput(model, parsed, roles, "nonpad_kv_seqlen", looksLikeValidLengths);
  for (auto stage : {findIds, findCache, findLogits})
    if (std::string error = stage(model, parsed, roles); !error.empty())
      return error;
  if (std::string error = checkEveryInputHasARole(model, roles); !error.empty())
    return error;
  return classifySymbols(model, roles);
}

std::string findEncoderRoles(const onnxc_model_descriptor &encoder, EncoderRoles &roles) {
  roles = EncoderRoles();
  Mapping none;
  GeneratorRoles found;
  found.mask = pickInput(encoder, none, found, "attention_mask", looksLikeMask);
  if (std::string error = findIds(encoder, none, found); !error.empty())
    return "encoder: " + error;
  if (std::string error = checkEveryInputHasARole(encoder, found); !error.empty())
    return "encoder: " + error;
  if (std::string error = classifySymbols(encoder, found); !error.empty())
    return "encoder: " + error;
  roles.ids = found.ids;
  roles.mask = found.mask;
  for (GeneratorRoles::SymbolKind kind : found.symbolKinds)
    roles.symbolIsBatch.push_back(kind == GeneratorRoles::SymbolKind::Batch);
  return "";
}

void bindGeneratorSymbols(const GeneratorRoles &roles, int64_t newTokens, int64_t past,
                          int64_t *symbols, int64_t batch) {
  using Kind = GeneratorRoles::SymbolKind;
  for (size_t s = 0; s < roles.symbolKinds.size(); ++s) {
    switch (roles.symbolKinds[s]) {
    case Kind::Batch:
      symbols[s] = batch;
      break;
    case Kind::NewTokens:
      symbols[s] = newTokens;
      break;
    case Kind::Past:
      symbols[s] = past;
      break;
    case Kind::Total:
      symbols[s] = past + newTokens;
      break;
    case Kind::Context:
    case Kind::Capacity:
    case Kind::CacheLength:
      break;
    }
  }
}

std::string describeRoles(const onnxc_model_descriptor &model, const GeneratorRoles &roles) {
  std::string text = "ids " + quoted(model.inputs[roles.ids].name);
  if (roles.mask >= 0)
    text += ", mask " + quoted(model.inputs[roles.mask].name);
  if (roles.positions >= 0)
    text += ", positions " + quoted(model.inputs[roles.positions].name);
  if (roles.writeIndices >= 0)
    text += ", write indices " + quoted(model.inputs[roles.writeIndices].name);
  if (roles.validLengths >= 0)
    text += ", valid lengths " + quoted(model.inputs[roles.validLengths].name);
  text += ", logits " + quoted(model.outputs[roles.logits].name);
  if (!roles.context.empty())
    text += ", " + std::to_string(roles.context.size()) + " input" +
            (roles.context.size() == 1 ? "" : "s") + " from the encoder";
  if (roles.hasCache()) {
    const CachePair &first = roles.cache.front();
    text += ", " + std::to_string(roles.cache.size()) + " cache pair" +
            (roles.cache.size() == 1 ? "" : "s") + " (" + model.inputs[first.input].name + " -> " +
            model.outputs[first.output].name + (roles.cache.size() > 1 ? ", ...)" : ")");
    int64_t states = std::count_if(roles.cache.begin(), roles.cache.end(),
                                   [](const CachePair &pair) { return pair.isState(); });
    if (states > 0)
      text += ", " + std::to_string(states) + " of them fed back whole (states)";
    if (roles.fixedCache())
      text += roles.fixedLength > 0
                  ? " of a fixed length of " + std::to_string(roles.fixedLength) + " positions"
                  : " of a fixed length (the capacity)";
  }
  return text;
}

} // namespace onnxc::runtime
