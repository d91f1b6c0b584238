//===- tests/fuzz/NpyFuzzer.cpp - .npy bytes through the reader -----------===//
//
// Input: the bytes of a .npy file, as `onnxc run --input x=FILE.npy` reads
// them. The reader may refuse them with onnxc::Error. What must hold for a
// tensor it accepts: the writer encodes it, and reading that back gives the
// same dtype, dims and bytes.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "ir/Error.h"
#include "tools/onnxc/Npy.h"

#include <string_view>

using namespace onnxc;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitMemory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  Tensor tensor;
  try {
    tensor = decodeNpy(bytes, "fuzz.npy");
  } catch (const Error &e) {
    fuzz::note(e.what());
    return 0;
  }
  if (!tensor.hasData() && tensor.numElements() != 0)
    fuzz::finding("the reader returned a tensor without data: " + tensor.typeString());
  std::string encoded;
  try {
    encoded = encodeNpy(tensor, "fuzz.npy");
  } catch (const Error &e) {
    fuzz::finding("the writer refuses a tensor the reader made (" + tensor.typeString() +
                  "): " + e.what());
  }
  Tensor again;
  try {
    again = decodeNpy(encoded, "again.npy");
  } catch (const Error &e) {
    fuzz::finding("the reader refuses what the writer wrote for " + tensor.typeString() + ": " +
                  e.what());
  }
  if (!again.identicalTo(tensor))
    fuzz::finding("write -> read changed the tensor: " + tensor.typeString() + " became " +
                  again.typeString());
  return 0;
}
