//===- serve/Auth.h - Who may call the server -----------------------------===//
//
// With an API key (--api-key or ONNXC_API_KEY) every endpoint but /health
// needs `Authorization: Bearer KEY`, as OpenAI-compatible servers ask; the
// comparison takes the same time whatever the first wrong byte.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace onnxc::serve {

/// Whether `authorization` (the header's value) carries `apiKey`; an empty
/// key lets everything through.
bool authorized(std::string_view apiKey, std::string_view authorization);

} // namespace onnxc::serve
