//===- serve/Auth.cpp - Who may call the server -----------------------------===//
#include "serve/Auth.h"

namespace onnxc::serve {

bool authorized(std::string_view apiKey, std::string_view authorization) {
  if (apiKey.empty())
    return true;
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() != kScheme.size() + apiKey.size() ||
      authorization.substr(0, kScheme.size()) != kScheme)
    return false;
  std::string_view given = authorization.substr(kScheme.size());
  unsigned char difference = 0;
  for (size_t i = 0; i < apiKey.size(); ++i)
    difference |= static_cast<unsigned char>(given[i] ^ apiKey[i]);
  return difference == 0;
}

} // namespace onnxc::serve
