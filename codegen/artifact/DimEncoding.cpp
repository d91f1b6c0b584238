//===- codegen/artifact/DimEncoding.cpp - ir::Dim -> the ABI's dim expression words -===//
#include "codegen/artifact/DimEncoding.h"

#include "ir/Error.h"

namespace onnxc {

std::vector<int64_t> encodeDim(const Dim &dim, const std::map<std::string, int32_t> &symbolIndex) {
  if (dim.isUnknown())
    fail("cannot compile a dimension nothing is known about ('?')");
  std::vector<int64_t> words{int64_t(dim.terms().size())};
  for (const auto &[monomial, coefficient] : dim.terms()) {
    words.push_back(coefficient);
    words.push_back(int64_t(monomial.size()));
    for (const std::string &symbol : monomial) {
      auto it = symbolIndex.find(symbol);
      if (it == symbolIndex.end())
        fail("dimension symbol '", symbol, "' is not bound by any model input");
      words.push_back(it->second);
    }
  }
  return words;
}

} // namespace onnxc
