//===- serve/ApiError.h - OpenAI's error body ----------------------------===//
//
// Every refusal answers with OpenAI's shape,
// {"error": {"message", "type", "param", "code"}}, so clients that read
// `error.message` (the openai package raises it) show the reason.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace onnxc::serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param; ///< The request field at fault; "" for none (null).
  std::string code;  ///< "" for none (null).

  /// The JSON body.
  std::string body() const;
};

inline ApiError badRequest(std::string message, std::string param = "") {
  return {400, std::move(message), "invalid_request_error", std::move(param), ""};
}

} // namespace onnxc::serve
