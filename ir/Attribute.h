//===- ir/Attribute.h - Node attributes -------------------------------------===//
#pragma once

#include "ir/Tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace onnxc {

/// An attribute value. Floats are f32, as in ONNX; the text IR prints them in
/// the shortest form that reads back to the same f32.
class Attribute {
public:
  enum class Kind { Int, Float, String, Ints, Floats, Strings, Tensor };

  Attribute(int64_t v) : value_(v) {}
  Attribute(int v) : value_(int64_t(v)) {}
  Attribute(float v) : value_(v) {}
  Attribute(std::string v) : value_(std::move(v)) {}
  Attribute(const char *v) : value_(std::string(v)) {}
  Attribute(std::vector<int64_t> v) : value_(std::move(v)) {}
  Attribute(std::vector<float> v) : value_(std::move(v)) {}
  Attribute(std::vector<std::string> v) : value_(std::move(v)) {}
  Attribute(onnxc::Tensor v) : value_(std::move(v)) {}

  Kind kind() const { return Kind(value_.index()); }
  bool isInt() const { return kind() == Kind::Int; }
  bool isFloat() const { return kind() == Kind::Float; }

  int64_t asInt() const { return std::get<int64_t>(value_); }
  float asFloat() const { return std::get<float>(value_); }
  const std::string &asString() const { return std::get<std::string>(value_); }
  const std::vector<int64_t> &asInts() const { return std::get<std::vector<int64_t>>(value_); }
  const std::vector<float> &asFloats() const { return std::get<std::vector<float>>(value_); }
  const std::vector<std::string> &asStrings() const {
    return std::get<std::vector<std::string>>(value_);
  }
  const onnxc::Tensor &asTensor() const { return std::get<onnxc::Tensor>(value_); }

  /// Same kind and same contents (tensors compared bitwise).
  bool operator==(const Attribute &other) const;
  bool operator!=(const Attribute &other) const { return !(*this == other); }

private:
  std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
               std::vector<std::string>, onnxc::Tensor>
      value_;
};

/// Attributes of a node, ordered by name (deterministic printing).
using AttributeMap = std::map<std::string, Attribute>;

} // namespace onnxc
