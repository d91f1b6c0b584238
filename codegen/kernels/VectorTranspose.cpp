//===- codegen/kernels/VectorTranspose.cpp - 8x8 transposition in vector registers -===//
#include "codegen/kernels/VectorTranspose.h"

#include "llvm/IR/IRBuilder.h"

namespace onnxc {

std::array<llvm::Value *, 8> transpose8x8(llvm::IRBuilderBase &builder,
                                          const std::array<llvm::Value *, 8> &rows) {
  auto shuffle = [&](llvm::Value *x, llvm::Value *y, llvm::ArrayRef<int> lanes) {
    return builder.CreateShuffleVector(x, y, lanes);
  };
  // t[2p], t[2p+1]: rows 2p and 2p+1 interleaved (columns {0,1,4,5}, {2,3,6,7}).
  std::array<llvm::Value *, 8> t, u, columns;
  for (size_t i = 0; i < 8; i += 2) {
    t[i] = shuffle(rows[i], rows[i + 1], {0, 8, 1, 9, 4, 12, 5, 13});
    t[i + 1] = shuffle(rows[i], rows[i + 1], {2, 10, 3, 11, 6, 14, 7, 15});
  }
  // u[g..g+3]: four rows of columns {0,4}, {1,5}, {2,6}, {3,7}.
  for (size_t g = 0; g < 8; g += 4) {
    u[g] = shuffle(t[g], t[g + 2], {0, 1, 8, 9, 4, 5, 12, 13});
    u[g + 1] = shuffle(t[g], t[g + 2], {2, 3, 10, 11, 6, 7, 14, 15});
    u[g + 2] = shuffle(t[g + 1], t[g + 3], {0, 1, 8, 9, 4, 5, 12, 13});
    u[g + 3] = shuffle(t[g + 1], t[g + 3], {2, 3, 10, 11, 6, 7, 14, 15});
  }
  // The 128-bit halves of rows 0-3 and 4-7.
  for (size_t c = 0; c < 4; ++c) {
    columns[c] = shuffle(u[c], u[c + 4], {0, 1, 2, 3, 8, 9, 10, 11});
    columns[c + 4] = shuffle(u[c], u[c + 4], {4, 5, 6, 7, 12, 13, 14, 15});
  }
  return columns;
}

} // namespace onnxc
