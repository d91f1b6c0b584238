//===- codegen/artifact/WeightsObject.h - A model's weights as an ELF object -===//
//
// The weights of a model.so go into an object file of their own, written
// straight from memory: one read-only data section holding each constant
// buffer at a 64-byte boundary under the symbol the descriptor refers to
// (externalConstantName). Passing gigabytes of weights through LLVM instead
// (a constant of the module, then the object's buffer) held three copies of
// them at once: a 4 GiB model took 17 GB to compile. The model's own object
// then only declares the symbols (ConstantPlacement::External), as the JIT's
// does, and the linker joins the two.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Triple;
}

namespace onnxc {

/// One symbol of the weights object: `size` bytes at `data` (not owned).
struct WeightsSymbol {
  std::string name;
  const uint8_t *data = nullptr;
  size_t size = 0;
};

/// Whether writeWeightsObject can write an object for `triple` (64-bit
/// little-endian ELF: x86-64 and AArch64).
bool canWriteWeightsObject(const llvm::Triple &triple);

/// Writes a relocatable ELF object for `triple` to `path` defining each of
/// `symbols` (hidden, so the library resolves them to itself and never
/// exports them) in one read-only section: `.lrodata` with x86-64's large
/// flag (linkers place it away from the code, beyond the reach of 32-bit
/// offsets, which only the descriptor's 64-bit pointers need), `.rodata`
/// elsewhere. Throws onnxc::Error naming the file when it cannot be written
/// (a full disk included), or for an unsupported triple.
void writeWeightsObject(const std::string &path, const llvm::Triple &triple,
                        const std::vector<WeightsSymbol> &symbols);

} // namespace onnxc
