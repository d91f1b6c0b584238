//===- ir/CheckedMath.h - int64 size arithmetic that never wraps ----------===//
//
// Sizes computed from attributes and constants (kernel extents, padded
// lengths, element counts) come from the model file, so any of them may be
// near the int64 limits. These helpers throw SizeError instead of wrapping;
// the drivers add the node (see withSizeContext in ir/Error.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <string>

namespace onnxc {

namespace detail {
[[noreturn]] inline void overflowed(int64_t a, const char *op, int64_t b) {
  throw SizeError("integer arithmetic overflows int64: " + std::to_string(a) + " " + op + " " +
                  std::to_string(b));
}
} // namespace detail

inline int64_t checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    detail::overflowed(a, "+", b);
  return r;
}

inline int64_t checkedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    detail::overflowed(a, "-", b);
  return r;
}

inline int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    detail::overflowed(a, "*", b);
  return r;
}

/// The product of `dims` (an element count), checked.
template <typename Range> int64_t checkedProduct(const Range &dims) {
  int64_t r = 1;
  for (int64_t d : dims)
    r = checkedMul(r, d);
  return r;
}

} // namespace onnxc
