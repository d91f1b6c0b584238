//===- runtime/AlignedBuffer.h - A growable, cache-line aligned byte block -===//
#pragma once

#include <cstddef>
#include <new>

namespace onnxc::runtime {

/// Memory for the arena and library-owned outputs. Growing discards the old
/// contents: both hold nothing across runs that a later run may read.
class AlignedBuffer {
public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  ~AlignedBuffer() { release(); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  AlignedBuffer(AlignedBuffer &&other) noexcept : data_(other.data_), capacity_(other.capacity_) {
    other.data_ = nullptr;
    other.capacity_ = 0;
  }

  /// Makes room for `bytes`, reallocating only when the block is too small.
  /// Throws std::bad_alloc like operator new.
  void reserve(size_t bytes) {
    if (bytes <= capacity_ && data_)
      return;
    release();
    // Never zero bytes, so data() is a distinct non-null pointer even for
    // empty tensors, which callers may compare against NULL.
    size_t size = bytes ? bytes : kAlignment;
    data_ = static_cast<std::byte *>(::operator new(size, std::align_val_t(kAlignment)));
    capacity_ = size;
  }

  std::byte *data() const { return data_; }
  size_t capacity() const { return capacity_; }

private:
  void release() {
    if (data_)
      ::operator delete(data_, std::align_val_t(kAlignment));
    data_ = nullptr;
    capacity_ = 0;
  }

  std::byte *data_ = nullptr;
  size_t capacity_ = 0;
};

} // namespace onnxc::runtime
