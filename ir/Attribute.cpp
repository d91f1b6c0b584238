//===- ir/Attribute.cpp - Node attributes -----------------------------------===//
#include "ir/Attribute.h"

#include <cstring>

namespace onnxc {

bool Attribute::operator==(const Attribute &other) const {
  if (kind() != other.kind())
    return false;
  if (kind() == Kind::Tensor)
    return asTensor().identicalTo(other.asTensor());
  if (kind() == Kind::Float) // bitwise, so NaN attributes compare equal to themselves
    return std::memcmp(&std::get<float>(value_), &std::get<float>(other.value_), 4) == 0;
  if (kind() == Kind::Floats) {
    // Bitwise as above. An empty vector's data() may be null, and memcmp on a
    // null pointer is undefined even for zero bytes: two empty lists are equal.
    const auto &a = asFloats(), &b = other.asFloats();
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
  }
  switch (kind()) {
  case Kind::Int:
    return asInt() == other.asInt();
  case Kind::String:
    return asString() == other.asString();
  case Kind::Ints:
    return asInts() == other.asInts();
  case Kind::Strings:
    return asStrings() == other.asStrings();
  default:
    return false; // handled above
  }
}

} // namespace onnxc
