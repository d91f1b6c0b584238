//===- runtime/generate/GeneratorRolesInternal.h - What the role finders share -===//
//
// The names, lookups and mapping of GeneratorRoles.cpp, shared with the
// cache pairs' half of the role finding (GeneratorCacheRoles.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "GeneratorRoles.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::runtime::roles {

inline std::string lower(std::string text) {
  for (char &c : text)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

inline bool contains(const char *name, const char *part) {
  return lower(name).find(part) != std::string::npos;
}

inline std::string quoted(const char *name) { return "'" + std::string(name) + "'"; }

inline bool isInteger(int32_t dtype) { return dtype == ONNXC_I64 || dtype == ONNXC_I32; }
inline bool isFloat(int32_t dtype) {
  return dtype == ONNXC_F32 || dtype == ONNXC_F16 || dtype == ONNXC_BF16 || dtype == ONNXC_F64;
}

/// A generator mapping (onnxc_generate_options.mapping), parsed.
struct Mapping {
  std::map<std::string, std::string> roles;   ///< input_ids, attention_mask, position_ids, logits
  std::map<std::string, std::string> cache;   ///< past input -> present output
  std::map<std::string, std::string> context; ///< decoder input -> encoder output ("": source mask)
};

inline int32_t findInput(const onnxc_model_descriptor &model, const std::string &name) {
  for (int32_t i = 0; i < model.num_inputs; ++i)
    if (name == model.inputs[i].name)
      return i;
  return -1;
}

inline int32_t findOutput(const onnxc_model_descriptor &model, const std::string &name) {
  for (int32_t o = 0; o < model.num_outputs; ++o)
    if (name == model.outputs[o].name)
      return o;
  return -1;
}

inline bool isContextInput(const GeneratorRoles &roles, int32_t input) {
  return std::any_of(roles.context.begin(), roles.context.end(),
                     [input](const ContextInput &context) { return context.input == input; });
}

inline bool hasOtherRole(const GeneratorRoles &roles, int32_t input) {
  return input == roles.ids || input == roles.mask || input == roles.positions ||
         input == roles.writeIndices || input == roles.validLengths || isContextInput(roles, input);
}

/// The cache pairs: the mapping's, then the descriptor's, then by name.
std::string findCache(const onnxc_model_descriptor &model, const Mapping &mapping,
                      GeneratorRoles &roles);

using SymbolKinds = std::vector<std::optional<GeneratorRoles::SymbolKind>>;

/// Gives the pairs their axes and kinds: they all grow, or are all fixed at
/// one length (a symbol the generator sets to its capacity, or a constant
/// that is the capacity); the cache's symbols get their kinds in `kinds`.
std::string classifyCachePairs(const onnxc_model_descriptor &model, GeneratorRoles &roles,
                               SymbolKinds &kinds);

} // namespace onnxc::runtime::roles
